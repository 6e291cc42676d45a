//! The peer codec (`replica::ensemble::codec`): every message round-trips, the layout is
//! pinned by golden bytes, and hostile or damaged frames are refused without panicking and
//! without allocating more than the frame can justify.
//!
//! Allocation is measured by a counting allocator installed for this test binary only; its
//! counters are per thread, so tests running in parallel do not disturb each other.

use proto::txn::{
    CheckVersionTxn, CloseSessionTxn, CreateContainerTxn, CreateSessionTxn, CreateTtlTxn,
    CreateTxn, DeleteTxn, ErrorTxn, SetAclTxn, SetDataTxn, Txn, TxnBody, TxnHeader,
};
use proto::{Acl, Id};
use replica::ensemble::codec::{self, decode, encode, tag, PeerMessage, FORMAT_VERSION};
use replica::ensemble::host_message::{Forwarded, HostMessage};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zab::{Entry, Message, Notification, PeerState, Vote, Zxid};

// ----- allocation accounting -----

struct CountingAllocator;

thread_local! {
    static LARGEST_ALLOCATION: Cell<usize> = const { Cell::new(0) };
    static LARGE_ALLOCATION_THRESHOLD: Cell<usize> = const { Cell::new(usize::MAX) };
    static LARGE_ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn record_allocation(size: usize) {
    // `try_with`: the allocator also runs while thread-locals are torn down.
    let _ = LARGEST_ALLOCATION.try_with(|largest| largest.set(largest.get().max(size)));
    let threshold = LARGE_ALLOCATION_THRESHOLD
        .try_with(Cell::get)
        .unwrap_or(usize::MAX);
    if size >= threshold {
        let _ = LARGE_ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
    }
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record_allocation(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record_allocation(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record_allocation(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// What `run` allocated on this thread: the largest single allocation, and how many were at
/// least `large_bytes`.
fn allocations_of<T>(large_bytes: usize, run: impl FnOnce() -> T) -> (T, usize, usize) {
    LARGEST_ALLOCATION.with(|largest| largest.set(0));
    LARGE_ALLOCATIONS.with(|count| count.set(0));
    LARGE_ALLOCATION_THRESHOLD.with(|threshold| threshold.set(large_bytes));
    let result = run();
    LARGE_ALLOCATION_THRESHOLD.with(|threshold| threshold.set(usize::MAX));
    let largest = LARGEST_ALLOCATION.with(Cell::get);
    let large_count = LARGE_ALLOCATIONS.with(Cell::get);
    (result, largest, large_count)
}

// ----- examples -----

fn header(zxid: Zxid, op_type: i32) -> TxnHeader {
    TxnHeader {
        client_id: 0x1234_5678_9abc,
        cxid: 7,
        zxid: zxid.as_i64(),
        time: 1_700_000_000_000,
        op_type,
    }
}

fn entry(zxid: Zxid, body: TxnBody, digest: Option<u64>) -> Message {
    let txn = Txn {
        header: header(zxid, body.op_type()),
        body,
    };
    Message::Proposal(Arc::new(Entry { zxid, txn, digest }))
}

fn world_acl() -> Vec<Acl> {
    vec![Acl {
        perms: 31,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

fn create_body(path: &str) -> TxnBody {
    TxnBody::Create(CreateTxn {
        path: path.into(),
        data: Some(b"hello".to_vec()),
        acl: world_acl().into(),
        ephemeral: false,
        parent_cversion: 3,
    })
}

fn multi_body() -> TxnBody {
    TxnBody::Multi(vec![
        create_body("/a"),
        TxnBody::SetData(SetDataTxn {
            path: "/a".into(),
            data: None,
            version: 1,
        }),
        TxnBody::Check(CheckVersionTxn {
            path: "/b".into(),
            version: -1,
        }),
        TxnBody::Delete(DeleteTxn { path: "/c".into() }),
        TxnBody::Error(ErrorTxn { err: -101 }),
    ])
}

fn transaction_bodies() -> Vec<TxnBody> {
    vec![
        create_body("/app/node"),
        TxnBody::Create2(CreateTxn {
            path: "/e".into(),
            data: Some(Vec::new()),
            acl: Vec::new().into(),
            ephemeral: true,
            parent_cversion: i32::MAX,
        }),
        TxnBody::CreateContainer(CreateContainerTxn {
            path: "/c".into(),
            data: None,
            acl: world_acl().into(),
            parent_cversion: 0,
        }),
        TxnBody::CreateTtl(CreateTtlTxn {
            path: "/t".into(),
            data: Some(vec![0; 3]),
            acl: world_acl().into(),
            parent_cversion: 1,
            ttl: i64::MAX,
        }),
        TxnBody::DeleteContainer(DeleteTxn { path: "/c".into() }),
        TxnBody::SetAcl(SetAclTxn {
            path: "/s".into(),
            acl: world_acl().into(),
            version: 4,
        }),
        TxnBody::CreateSession(CreateSessionTxn { timeout_ms: 30_000 }),
        TxnBody::CloseSession(CloseSessionTxn {
            paths_to_delete: vec!["/e1".into(), "/e2".into()],
        }),
        multi_body(),
        TxnBody::Multi(Vec::new()),
    ]
}

fn notification(state: PeerState, voter: bool, vote: Vote, round: u64) -> Message {
    Message::Notification(Notification {
        vote,
        round,
        state,
        voter,
        config: Zxid::ZERO,
        config_pending: Zxid::ZERO,
    })
}

fn election_examples() -> Vec<Message> {
    let zero_vote = Vote {
        leader: 0,
        zxid: Zxid::ZERO,
        epoch: 0,
    };
    let max_vote = Vote {
        leader: u64::MAX,
        zxid: Zxid(u64::MAX),
        epoch: u32::MAX,
    };
    vec![
        notification(PeerState::Looking, true, zero_vote, 0),
        notification(PeerState::Following, false, max_vote, u64::MAX),
        notification(PeerState::Leading, true, max_vote, 1),
        notification(PeerState::Observing, false, zero_vote, 1 << 40),
    ]
}

fn discovery_examples() -> Vec<Message> {
    vec![
        Message::FollowerInfo {
            accepted_epoch: 0,
            last_zxid: Zxid::ZERO,
            observer: false,
            recovering: false,
            incarnation: 0,
        },
        Message::FollowerInfo {
            accepted_epoch: u32::MAX,
            last_zxid: Zxid::new(u32::MAX, u32::MAX),
            observer: true,
            recovering: true,
            incarnation: u64::MAX,
        },
        Message::LeaderInfo { epoch: u32::MAX },
        Message::AckEpoch {
            current_epoch: None,
            last_zxid: Zxid::new(3, 9),
        },
        Message::AckEpoch {
            current_epoch: Some(u32::MAX),
            last_zxid: Zxid::ZERO,
        },
        Message::AckEpoch {
            current_epoch: Some(0),
            last_zxid: Zxid(u64::MAX),
        },
    ]
}

fn sync_and_broadcast_examples() -> Vec<Message> {
    let mut messages = vec![
        Message::Diff { zxid: Zxid::ZERO },
        Message::Trunc {
            zxid: Zxid::new(2, 17),
        },
        Message::Snap {
            zxid: Zxid::ZERO,
            image: Arc::new(Vec::new()),
        },
        Message::Snap {
            zxid: Zxid::new(5, 1),
            image: Arc::new((0..=255).collect()),
        },
        Message::Commit {
            zxid: Zxid(u64::MAX),
        },
        Message::Inform(Arc::new(Entry {
            zxid: Zxid::new(1, 1),
            txn: Txn {
                header: header(Zxid::new(1, 1), multi_body().op_type()),
                body: multi_body(),
            },
            digest: Some(u64::MAX),
        })),
        Message::NewLeader { epoch: 0 },
        Message::Ack {
            zxid: Zxid::new(7, 0),
        },
        Message::UpToDate {
            committed: Zxid::new(7, 3),
        },
        Message::Ping,
        Message::Abdicate {
            successor: Vote {
                leader: 2,
                zxid: Zxid::new(7, 12),
                epoch: 7,
            },
        },
        Message::Config {
            membership: zab::Membership {
                version: Zxid::new(7, 2),
                voters: [1, 2, 3].into(),
                observers: [4].into(),
            },
            committed: false,
        },
    ];
    for (counter, body) in (1..).zip(transaction_bodies()) {
        let digest = (counter % 2 == 0).then_some(0xdead_beef_u64 * counter as u64);
        messages.push(entry(Zxid::new(9, counter), body, digest));
    }
    messages
}

fn host_examples() -> Vec<HostMessage> {
    vec![
        HostMessage::Forward(Forwarded {
            session_id: i64::MIN,
            xid: -2,
            op_type: 1,
            body: Vec::new(),
            auth_ids: Vec::new(),
        }),
        HostMessage::Forward(Forwarded {
            session_id: 0x100_0000_0001,
            xid: i32::MAX,
            op_type: 14,
            body: vec![0xab; 300],
            auth_ids: vec![
                Id {
                    scheme: "digest".into(),
                    id: "alice:hash=".into(),
                },
                Id {
                    scheme: "ip".into(),
                    id: "".into(),
                },
            ],
        }),
        HostMessage::CreateSession {
            session_id: 1,
            timeout_ms: 4_000,
        },
        HostMessage::Touch {
            sessions: Vec::new(),
        },
        HostMessage::Touch {
            sessions: vec![i64::MIN, -1, 0, 1, i64::MAX],
        },
        HostMessage::Revalidate {
            session_id: 42,
            timeout_ms: i32::MAX,
        },
        HostMessage::Revalidated {
            session_id: 42,
            timeout_ms: 0,
        },
        HostMessage::DigestAt {
            zxid: 0,
            digest: u64::MAX,
        },
        HostMessage::EndSession {
            session_id: i64::MIN,
        },
        HostMessage::Throttled {
            session_id: 7,
            xid: i32::MIN,
        },
    ]
}

/// Small examples of every variant of both enums, for the exhaustive and fuzz tests.
fn examples() -> Vec<PeerMessage> {
    let zab = election_examples()
        .into_iter()
        .chain(discovery_examples())
        .chain(sync_and_broadcast_examples())
        .map(PeerMessage::Zab);
    zab.chain(host_examples().into_iter().map(PeerMessage::Host))
        .collect()
}

fn kind(msg: &PeerMessage) -> &'static str {
    msg.kind()
}

// ----- round trips and layout -----

#[test]
fn every_example_round_trips_under_its_own_tag() {
    for msg in examples() {
        let frame = encode(&msg);
        assert_eq!(frame.first(), Some(&FORMAT_VERSION), "{msg:?}");
        let tag_name = frame.get(1).and_then(|&t| tag::name(t));
        assert_eq!(tag_name, Some(kind(&msg)), "{msg:?}");
        assert_eq!(decode(&frame), Ok(msg));
    }
}

#[test]
fn the_examples_cover_every_tag() {
    let kinds: std::collections::BTreeSet<_> = examples().iter().map(kind).collect();
    let tags: std::collections::BTreeSet<_> = (0..=u8::MAX).filter_map(tag::name).collect();
    assert_eq!(kinds, tags);
    assert_eq!(tags.len(), 24);
}

#[test]
fn encode_zab_and_encode_host_match_encode() {
    for msg in examples() {
        let direct = match &msg {
            PeerMessage::Zab(zab_msg) => codec::encode_zab(zab_msg),
            PeerMessage::Host(host_msg) => codec::encode_host(host_msg),
        };
        assert_eq!(direct, encode(&msg));
    }
}

/// Pins the layout: a change here breaks mixed-version ensembles, so it must be deliberate
/// (and come with a new FORMAT_VERSION).
#[test]
fn golden_frames() {
    let zab = |m| encode(&PeerMessage::Zab(m));
    let host = |m| encode(&PeerMessage::Host(m));
    assert_eq!(zab(Message::Ping), [2, 0x0e]);
    assert_eq!(
        zab(Message::Abdicate {
            successor: Vote {
                leader: 2,
                zxid: Zxid::new(1, 3),
                epoch: 1,
            },
        }),
        [2, 0x0f, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 1]
    );
    assert_eq!(
        zab(Message::Commit {
            zxid: Zxid::new(1, 2)
        }),
        [2, 0x09, 0, 0, 0, 1, 0, 0, 0, 2]
    );
    assert_eq!(
        zab(Message::AckEpoch {
            current_epoch: None,
            last_zxid: Zxid::new(0, 5)
        }),
        [2, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 5]
    );
    assert_eq!(
        zab(Message::AckEpoch {
            current_epoch: Some(u32::MAX),
            last_zxid: Zxid::ZERO
        }),
        [2, 0x04, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    let vote = Vote {
        leader: 3,
        zxid: Zxid::new(1, 4),
        epoch: 1,
    };
    let mut expected = vec![2, 0x01, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 4];
    expected.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2, 1]);
    // The active configuration's version, then the pending one's (none).
    expected.extend([0; 16]);
    assert_eq!(
        zab(notification(PeerState::Leading, true, vote, 9)),
        expected
    );
    assert_eq!(
        zab(Message::Config {
            membership: zab::Membership {
                version: Zxid::new(1, 2),
                voters: [1, 2].into(),
                observers: [3].into(),
            },
            committed: true,
        }),
        [
            2, 0x10, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0,
            0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3
        ]
    );
    assert_eq!(
        host(HostMessage::Touch {
            sessions: vec![1, -1]
        }),
        [2, 0x43, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 255, 255, 255, 255, 255, 255, 255, 255]
    );
}

#[test]
fn an_entry_is_zxid_then_digest_then_transaction() {
    let msg = entry(
        Zxid::new(1, 1),
        TxnBody::Error(ErrorTxn { err: 5 }),
        Some(2),
    );
    let mut expected = vec![2, 0x08, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2];
    let mut txn = proto::Writer::wrap(Vec::new());
    proto::Record::encode(&header(Zxid::new(1, 1), -1), &mut txn);
    txn.write_i32(5);
    expected.extend(txn.as_slice());
    assert_eq!(encode(&PeerMessage::Zab(msg)), expected);
}

#[test]
fn a_large_touch_list_round_trips() {
    let sessions: Vec<i64> = (0..200_000).map(|i| i * 7919 - 1_000_000).collect();
    let msg = PeerMessage::Host(HostMessage::Touch { sessions });
    let frame = encode(&msg);
    assert_eq!(frame.len(), 2 + 4 + 8 * 200_000);
    assert_eq!(decode(&frame), Ok(msg));
}

#[test]
fn a_large_snapshot_is_copied_once_each_way() {
    let image_len = 16 << 20;
    let image: Vec<u8> = (0..image_len).map(|i| (i % 251) as u8).collect();
    let msg = PeerMessage::Zab(Message::Snap {
        zxid: Zxid::new(4, 4),
        image: Arc::new(image),
    });

    let (frame, _, large_encode_allocations) = allocations_of(image_len, || encode(&msg));
    assert_eq!(
        large_encode_allocations, 1,
        "encode must copy the image once"
    );
    assert_eq!(frame.len(), 2 + 8 + 4 + image_len);
    assert_eq!(frame.capacity(), frame.len());

    let (decoded, _, large_decode_allocations) = allocations_of(image_len, || decode(&frame));
    assert_eq!(
        large_decode_allocations, 1,
        "decode must copy the image once"
    );
    assert_eq!(decoded, Ok(msg));
}

// ----- damaged frames -----

fn all_frames() -> Vec<Vec<u8>> {
    examples().iter().map(encode).collect()
}

#[test]
fn every_strict_prefix_fails() {
    for frame in all_frames() {
        for len in 0..frame.len() {
            let prefix = &frame[..len];
            assert!(decode(prefix).is_err(), "prefix {len} of {frame:?}");
        }
    }
}

#[test]
fn trailing_bytes_fail() {
    for frame in all_frames() {
        for extra in [&[0u8][..], &[1], &[0xff; 100]] {
            let mut longer = frame.clone();
            longer.extend_from_slice(extra);
            let error = decode(&longer).expect_err("trailing bytes accepted");
            assert!(error.0.contains("trailing"), "{error}");
        }
    }
}

#[test]
fn any_other_version_byte_fails() {
    for frame in all_frames() {
        for version in (0..=u8::MAX).filter(|&v| v != FORMAT_VERSION) {
            let mut damaged = frame.clone();
            damaged[0] = version;
            let error = decode(&damaged).expect_err("wrong version accepted");
            assert!(error.0.contains("format version"), "{error}");
        }
    }
}

/// A tag byte that names no message always fails. A tag changed into another kind with the
/// same fields (DIFF and TRUNC both carry one zxid) cannot be detected without a checksum, so
/// there the test asks only that it never decodes as the original message.
#[test]
fn a_corrupted_tag_byte_fails_or_names_another_kind() {
    for msg in examples() {
        let frame = encode(&msg);
        for new_tag in (0..=u8::MAX).filter(|&t| Some(&t) != frame.get(1)) {
            let mut damaged = frame.clone();
            damaged[1] = new_tag;
            match (tag::name(new_tag), decode(&damaged)) {
                (None, Err(error)) => assert!(error.0.contains("unknown tag"), "{error}"),
                (None, Ok(other)) => panic!("tag {new_tag:#04x} is no tag, yet gave {other:?}"),
                (Some(_), Ok(other)) => assert_ne!(kind(&other), kind(&msg)),
                (Some(_), Err(_)) => {}
            }
        }
    }
}

fn frame_of(tag_byte: u8, fields: &[&[u8]]) -> Vec<u8> {
    let mut frame = vec![FORMAT_VERSION, tag_byte];
    for field in fields {
        frame.extend_from_slice(field);
    }
    frame
}

#[test]
fn out_of_range_enums_and_flags_fail() {
    let zxid = [0u8; 8];
    let epoch = [0u8; 4];
    let state = |code: i32| code.to_be_bytes();
    let notification = |state: &[u8], voter: u8| {
        frame_of(
            tag::NOTIFICATION,
            &[&zxid, &zxid, &epoch, &zxid, state, &[voter], &zxid, &zxid],
        )
    };
    assert!(decode(&notification(&state(3), 1)).is_ok());
    for code in [4, -1, i32::MAX] {
        let error = decode(&notification(&state(code), 1)).expect_err("bad peer state");
        assert!(error.0.contains("peer state"), "{error}");
    }
    let error = decode(&notification(&state(0), 2)).expect_err("voter flag 2");
    assert!(error.0.contains("voter flag"), "{error}");
    let error = decode(&frame_of(tag::ACK_EPOCH, &[&[0xff], &zxid])).expect_err("flag 0xff");
    assert!(error.0.contains("current epoch presence"), "{error}");
}

#[test]
fn null_buffers_and_negative_counts_fail() {
    let null = (-1i32).to_be_bytes();
    let session = [0u8; 8];
    let int = [0u8; 4];
    let snap = frame_of(tag::SNAP, &[&[0; 8], &null]);
    assert!(decode(&snap).expect_err("null image").0.contains("image"));
    let forward = frame_of(tag::FORWARD, &[&session, &int, &int, &null, &int]);
    assert!(decode(&forward).expect_err("null body").0.contains("body"));
    let touch = frame_of(tag::TOUCH, &[&null]);
    assert!(decode(&touch)
        .expect_err("null touch")
        .0
        .contains("negative"));
    let touch = frame_of(tag::TOUCH, &[&i32::MIN.to_be_bytes()]);
    assert!(decode(&touch)
        .expect_err("negative touch")
        .0
        .contains("negative"));
}

/// Lengths a frame cannot hold fail before anything is allocated for them: each frame here is
/// 32 bytes, and decoding may allocate no more than its error message.
#[test]
fn hostile_lengths_fail_fast_without_allocating() {
    let huge = i32::MAX.to_be_bytes();
    let padded = |tag_byte: u8, fields: &[&[u8]]| {
        let mut frame = frame_of(tag_byte, fields);
        frame.resize(32, 0);
        frame
    };
    let no_int = [0u8; 4];
    let no_long = [0u8; 8];
    let hostile = [
        ("TOUCH", padded(tag::TOUCH, &[&huge])),
        ("SNAP", padded(tag::SNAP, &[&no_long, &huge])),
        (
            "FORWARD",
            padded(tag::FORWARD, &[&no_long, &no_int, &no_int, &huge]),
        ),
        (
            "FORWARD",
            padded(tag::FORWARD, &[&no_long, &no_int, &no_int, &no_int, &huge]),
        ),
    ];
    for (kind, frame) in hostile {
        let started = Instant::now();
        let (result, largest, _) = allocations_of(usize::MAX, || decode(&frame));
        let error = result.expect_err("hostile length accepted");
        assert!(error.0.starts_with(kind), "{error}");
        assert!(error.to_string().starts_with("undecodable peer frame: "));
        assert!(error.0.contains("exceeds the remaining"), "{error}");
        assert!(
            largest < 1024,
            "{kind}: allocated {largest} bytes for a 32-byte frame"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}

// ----- fuzzing -----

/// xorshift64: deterministic, so a failure reproduces from the printed seed and iteration.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

const FUZZ_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
const RANDOM_FRAMES: usize = 200_000;
const MUTATED_FRAMES: usize = 100_000;
const FRAME_LEN_MAX: usize = 512;
const FUZZ_TIME_MAX: Duration = Duration::from_secs(120);

/// Decoding a frame never allocates more than a small multiple of its length (the in-memory
/// form of a record is bigger than its wire form); a decoded message re-encodes to a frame
/// that decodes to the same message.
fn check_frame(frame: &[u8], context: &str) {
    let (result, largest, _) = allocations_of(usize::MAX, || decode(frame));
    let allowance = 4096 + 16 * frame.len();
    assert!(largest <= allowance, "{context}: allocated {largest} bytes");
    if let Ok(msg) = result {
        assert_eq!(decode(&encode(&msg)), Ok(msg), "{context}");
    }
}

/// Random frames, most with a valid version and tag so that the field decoders are reached.
#[test]
fn random_frames_never_panic() {
    let mut rng = Xorshift(FUZZ_SEED);
    let tags: Vec<u8> = (0..=u8::MAX).filter(|&t| tag::name(t).is_some()).collect();
    let started = Instant::now();
    for iteration in 0..RANDOM_FRAMES {
        let len = rng.below(FRAME_LEN_MAX);
        let mut frame: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        if len >= 2 && rng.below(4) != 0 {
            frame[0] = FORMAT_VERSION;
            frame[1] = tags[rng.below(tags.len())];
        }
        check_frame(
            &frame,
            &format!("seed {FUZZ_SEED:#x} iteration {iteration}"),
        );
    }
    assert!(started.elapsed() < FUZZ_TIME_MAX);
}

fn mutate(rng: &mut Xorshift, frame: &mut Vec<u8>) {
    let at = rng.below(frame.len().max(1));
    match rng.below(6) {
        0 => {
            if let Some(byte) = frame.get_mut(at) {
                *byte ^= 1 << rng.below(8);
            }
        }
        1 => {
            if let Some(byte) = frame.get_mut(at) {
                *byte = rng.byte();
            }
        }
        2 => {
            // A length field claiming much more than the frame holds.
            let claims = [i32::MAX, i32::MIN, -1, 0x0100_0000, rng.next() as i32];
            let claim = claims[rng.below(claims.len())].to_be_bytes();
            for (offset, byte) in claim.into_iter().enumerate() {
                if let Some(slot) = frame.get_mut(at + offset) {
                    *slot = byte;
                }
            }
        }
        3 => frame.truncate(at),
        4 => frame.extend((0..rng.below(16) + 1).map(|_| rng.byte())),
        _ => frame.insert(at.min(frame.len()), rng.byte()),
    }
}

/// Valid frames with one to four random mutations.
#[test]
fn mutated_frames_never_panic() {
    let mut rng = Xorshift(FUZZ_SEED ^ 0xa5a5);
    let frames = all_frames();
    let started = Instant::now();
    for iteration in 0..MUTATED_FRAMES {
        let mut frame = frames[rng.below(frames.len())].clone();
        for _ in 0..=rng.below(4) {
            mutate(&mut rng, &mut frame);
        }
        check_frame(
            &frame,
            &format!("seed {FUZZ_SEED:#x} iteration {iteration}"),
        );
    }
    assert!(started.elapsed() < FUZZ_TIME_MAX);
}
