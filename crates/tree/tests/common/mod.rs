//! Shared support for the tree crate's property tests: a deliberately simple reference model
//! of ZooKeeper's data tree, random operation sequences over a small path space, a driver for
//! the real `Prep` + `DataTree`, and state comparison.
//!
//! The model is written from ZooKeeper's `PrepRequestProcessor` (order of checks) and
//! `DataTree` (effects), not from the crate under test: it keeps every node in one map keyed by
//! its exact path, applies each request immediately (no pending changes), and computes child
//! lists by scanning. Speed does not matter; obviousness does.

#![allow(dead_code)] // each test binary uses a different part of this module

use proptest::prelude::*;
use proto::multi::MultiOp;
use proto::request::Request;
use proto::txn::Txn;
use proto::watch::perms;
use proto::{
    Acl, CreateRequest, CreateTtlRequest, ErrorCode, Id, OpCode, PathAndVersion, SetAclRequest,
    SetDataRequest, Stat,
};
use std::collections::{BTreeMap, BTreeSet};
use tree::{DataTree, Prep, PrepContext, Trigger, TxnOutcome};

/// A watch trigger as the model states it: which change, on which path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fired {
    Created(String),
    Deleted(String),
    DataChanged(String),
    ChildrenChanged(String),
}

/// The tree's trigger as a `Fired` (any further fields of the tree's triggers are ignored).
pub fn fired(t: &Trigger) -> Fired {
    match t {
        Trigger::Created(p, ..) => Fired::Created(p.to_string()),
        Trigger::Deleted(p, ..) => Fired::Deleted(p.to_string()),
        Trigger::DataChanged(p, ..) => Fired::DataChanged(p.to_string()),
        Trigger::ChildrenChanged(p, ..) => Fired::ChildrenChanged(p.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Sessions and identities
// ---------------------------------------------------------------------------------------------

/// Number of client session slots. A slot's session id changes when it is closed.
pub const SLOTS: usize = 3;

/// The session id a slot starts with (high byte 0x01, like a server id in ZooKeeper's ids).
pub fn first_session(slot: usize) -> i64 {
    0x0100_0000_0000_0000 + ((slot as i64 + 1) << 16)
}

pub fn alice() -> String {
    tree::acl::digest_id("alice:secret")
}

pub fn bob() -> String {
    tree::acl::digest_id("bob:hunter2")
}

fn id(scheme: &str, id: &str) -> Id {
    Id {
        scheme: scheme.to_string().into(),
        id: id.to_string().into(),
    }
}

/// Slot 0 authenticated as alice, slot 1 as nobody, slot 2 as bob (each also has its ip).
pub fn auth_of(slot: usize) -> Vec<Id> {
    match slot {
        0 => vec![id("ip", "127.0.0.1"), id("digest", &alice())],
        1 => vec![id("ip", "127.0.0.1")],
        _ => vec![id("ip", "10.0.0.2"), id("digest", &bob())],
    }
}

// ---------------------------------------------------------------------------------------------
// Generated operations (abstract; resolved against the model when they run)
// ---------------------------------------------------------------------------------------------

/// How an operation names its path.
#[derive(Debug, Clone)]
pub enum PathSel {
    /// A literal path (mostly `/a`, `/a/b/c`, ... and a few malformed or special ones).
    Fixed(String),
    /// The i-th existing node (mod the node count), sorted by path.
    Existing(usize),
    /// A child with this name under the i-th existing node (reaches sequential nodes).
    Under(usize, &'static str),
}

/// Which expected version an operation carries.
#[derive(Debug, Clone, Copy)]
pub enum Ver {
    Any,
    Correct,
    Stale,
    Raw(i32),
}

/// ACL lists a request may carry.
#[derive(Debug, Clone, Copy)]
pub enum AclSel {
    Open,
    /// digest alice, all permissions: only slot 0 may touch it.
    Alice,
    /// digest alice all + world read.
    AliceWorldRead,
    /// world create|delete|read: no write, no admin.
    WorldCreateDelete,
    /// world read only.
    WorldRead,
    /// `auth` scheme: the creator's digest identities (InvalidACL for slot 1).
    Auth,
    /// ip 127.0.0.1 all (slots 0 and 1).
    IpLocal,
    /// Duplicated open entries (collapsed by fix-up).
    Dup,
    /// InvalidACL: empty list.
    Empty,
    /// InvalidACL: malformed digest id.
    BadDigest,
    /// InvalidACL: world with an id other than anyone.
    BadWorld,
}

pub fn acl_list(sel: AclSel) -> Vec<Acl> {
    let entry = |perms: i32, scheme: &str, i: &str| Acl {
        perms,
        id: id(scheme, i),
    };
    match sel {
        AclSel::Open => vec![entry(perms::ALL, "world", "anyone")],
        AclSel::Alice => vec![entry(perms::ALL, "digest", &alice())],
        AclSel::AliceWorldRead => vec![
            entry(perms::ALL, "digest", &alice()),
            entry(perms::READ, "world", "anyone"),
        ],
        AclSel::WorldCreateDelete => vec![entry(
            perms::CREATE | perms::DELETE | perms::READ,
            "world",
            "anyone",
        )],
        AclSel::WorldRead => vec![entry(perms::READ, "world", "anyone")],
        AclSel::Auth => vec![entry(perms::ALL, "auth", "")],
        AclSel::IpLocal => vec![entry(perms::ALL, "ip", "127.0.0.1")],
        AclSel::Dup => vec![
            entry(perms::ALL, "world", "anyone"),
            entry(perms::ALL, "world", "anyone"),
        ],
        AclSel::Empty => vec![],
        AclSel::BadDigest => vec![entry(perms::ALL, "digest", "nocolon")],
        AclSel::BadWorld => vec![entry(perms::ALL, "world", "someone")],
    }
}

/// Create modes, each with the op code and flags a real client sends for it, plus a few
/// malformed combinations.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Persistent,
    Ephemeral,
    PersistentSeq,
    EphemeralSeq,
    Container,
    Ttl,
    TtlSeq,
    /// createTTL with ttl 0: BadArguments.
    TtlZero,
    /// createTTL with a non-TTL mode and a ttl: BadArguments.
    TtlNonTtlMode,
    /// create with flag 5 (TTL) but no ttl: BadArguments.
    TtlViaCreate,
    /// An unknown flag: BadArguments.
    BadFlag,
}

#[derive(Debug, Clone)]
pub enum Op {
    Create {
        slot: usize,
        path: PathSel,
        data: Option<Vec<u8>>,
        acl: AclSel,
        kind: Kind,
        create2: bool,
    },
    Delete {
        slot: usize,
        path: PathSel,
        ver: Ver,
    },
    SetData {
        slot: usize,
        path: PathSel,
        data: Option<Vec<u8>>,
        ver: Ver,
    },
    SetAcl {
        slot: usize,
        path: PathSel,
        acl: AclSel,
        ver: Ver,
    },
    Check {
        slot: usize,
        path: PathSel,
        ver: Ver,
    },
    /// The sub-operations' slots are ignored: the multi's slot sends them all.
    Multi {
        slot: usize,
        ops: Vec<Op>,
    },
    Close {
        slot: usize,
    },
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// How requests are spread. `Wide`: paths of depth ≤ 3 over {a, b, c} and every create mode.
/// `Dense`: three paths, mostly ephemerals and session closes, so that requests of one
/// pipelined batch often touch the same node from different sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Wide,
    Dense,
}

const NAMES: [&str; 3] = ["a", "b", "c"];

fn fixed_path(profile: Profile) -> BoxedStrategy<String> {
    match profile {
        Profile::Wide => prop_oneof![
            4 => prop::collection::vec(prop::sample::select(&NAMES[..]), 1..=1),
            4 => prop::collection::vec(prop::sample::select(&NAMES[..]), 2..=2),
            2 => prop::collection::vec(prop::sample::select(&NAMES[..]), 3..=3),
        ]
        .prop_map(|names| format!("/{}", names.join("/")))
        .boxed(),
        Profile::Dense => prop::sample::select(&["/a", "/a", "/b", "/a/b"][..])
            .prop_map(str::to_string)
            .boxed(),
    }
}

fn odd_path() -> impl Strategy<Value = String> {
    prop::sample::select(
        &[
            "/",
            "/zookeeper",
            "/zookeeper/quota",
            "/zookeeper/config",
            "/zookeeper/x",
            "/a/",
            "//a",
            "/a//b",
            "/a/./b",
            "/.",
            "a",
            "",
            "/a\u{0}",
        ][..],
    )
    .prop_map(str::to_string)
}

pub fn path_sel(profile: Profile) -> impl Strategy<Value = PathSel> {
    path_sel_weighted(profile, 10, 1)
}

/// Paths for creates: a child of an existing node more often, so that trees grow.
fn create_path_sel(profile: Profile) -> impl Strategy<Value = PathSel> {
    path_sel_weighted(profile, 3, 8)
}

/// `existing`, `under`: weights of picking an existing node or a child of one, against 12
/// (wide) or 40 (dense) for a literal path.
fn path_sel_weighted(
    profile: Profile,
    existing: u32,
    under: u32,
) -> impl Strategy<Value = PathSel> {
    let fixed_weight = if profile == Profile::Dense { 40 } else { 12 };
    prop_oneof![
        fixed_weight => fixed_path(profile).prop_map(PathSel::Fixed),
        existing => (0..64usize).prop_map(PathSel::Existing),
        under => (0..64usize, prop::sample::select(&["a", "b", "s"][..]))
            .prop_map(|(i, n)| PathSel::Under(i, n)),
        1 => odd_path().prop_map(PathSel::Fixed),
    ]
}

pub fn ver() -> impl Strategy<Value = Ver> {
    prop_oneof![
        4 => Just(Ver::Any),
        4 => Just(Ver::Correct),
        1 => Just(Ver::Stale),
        1 => (0..3i32).prop_map(Ver::Raw),
    ]
}

pub fn acl_sel() -> impl Strategy<Value = AclSel> {
    prop_oneof![
        12 => Just(AclSel::Open),
        3 => Just(AclSel::Alice),
        2 => Just(AclSel::AliceWorldRead),
        2 => Just(AclSel::WorldCreateDelete),
        1 => Just(AclSel::WorldRead),
        2 => Just(AclSel::Auth),
        1 => Just(AclSel::IpLocal),
        1 => Just(AclSel::Dup),
        1 => Just(AclSel::Empty),
        1 => Just(AclSel::BadDigest),
        1 => Just(AclSel::BadWorld),
    ]
}

pub fn kind(profile: Profile) -> BoxedStrategy<Kind> {
    match profile {
        Profile::Wide => prop_oneof![
            10 => Just(Kind::Persistent),
            5 => Just(Kind::Ephemeral),
            4 => Just(Kind::PersistentSeq),
            3 => Just(Kind::EphemeralSeq),
            2 => Just(Kind::Container),
            1 => Just(Kind::Ttl),
            1 => Just(Kind::TtlSeq),
            1 => prop::sample::select(
                &[Kind::TtlZero, Kind::TtlNonTtlMode, Kind::TtlViaCreate, Kind::BadFlag][..]
            ),
        ]
        .boxed(),
        Profile::Dense => prop_oneof![
            3 => Just(Kind::Persistent),
            8 => Just(Kind::Ephemeral),
            1 => Just(Kind::PersistentSeq),
            1 => Just(Kind::EphemeralSeq),
            1 => Just(Kind::Container),
        ]
        .boxed(),
    }
}

pub fn data() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(Vec::new())),
        3 => prop::collection::vec(any::<u8>(), 1..4).prop_map(Some),
    ]
}

fn slot() -> impl Strategy<Value = usize> {
    0..SLOTS
}

fn create_op(p: Profile) -> impl Strategy<Value = Op> {
    (
        slot(),
        create_path_sel(p),
        data(),
        acl_sel(),
        kind(p),
        any::<bool>(),
    )
        .prop_map(|(slot, path, data, acl, kind, create2)| Op::Create {
            slot,
            path,
            data,
            acl,
            kind,
            create2,
        })
}

fn delete_op(p: Profile) -> impl Strategy<Value = Op> {
    (slot(), path_sel(p), ver()).prop_map(|(slot, path, ver)| Op::Delete { slot, path, ver })
}

fn set_data_op(p: Profile) -> impl Strategy<Value = Op> {
    (slot(), path_sel(p), data(), ver()).prop_map(|(slot, path, data, ver)| Op::SetData {
        slot,
        path,
        data,
        ver,
    })
}

fn set_acl_op(p: Profile) -> impl Strategy<Value = Op> {
    (slot(), path_sel(p), acl_sel(), ver()).prop_map(|(slot, path, acl, ver)| Op::SetAcl {
        slot,
        path,
        acl,
        ver,
    })
}

fn check_op(p: Profile) -> impl Strategy<Value = Op> {
    (slot(), path_sel(p), ver()).prop_map(|(slot, path, ver)| Op::Check { slot, path, ver })
}

/// Operations a multi may hold (create, delete, setData, check), aimed at existing nodes
/// more often than single requests so that more multis succeed.
pub fn multi_sub_op(p: Profile) -> impl Strategy<Value = Op> {
    let path = move || path_sel_weighted(p, 14, 2);
    prop_oneof![
        4 => (slot(), create_path_sel(p), data(), acl_sel(), kind(p), any::<bool>()).prop_map(
            |(slot, path, data, acl, kind, create2)| Op::Create {
                slot,
                path,
                data,
                acl,
                kind,
                create2,
            },
        ),
        3 => (slot(), path(), ver()).prop_map(|(slot, path, ver)| Op::Delete { slot, path, ver }),
        2 => (slot(), path(), data(), ver()).prop_map(|(slot, path, data, ver)| Op::SetData {
            slot,
            path,
            data,
            ver,
        }),
        2 => (slot(), path(), ver()).prop_map(|(slot, path, ver)| Op::Check { slot, path, ver }),
    ]
}

pub fn op(p: Profile) -> impl Strategy<Value = Op> {
    let close_weight = if p == Profile::Dense { 10 } else { 3 };
    let multi_len = prop_oneof![1 => 0..=0usize, 9 => 1..=5usize];
    prop_oneof![
        34 => create_op(p),
        15 => delete_op(p),
        10 => set_data_op(p),
        5 => set_acl_op(p),
        4 => check_op(p),
        14 => (slot(), multi_len.prop_flat_map(move |n| {
            prop::collection::vec(multi_sub_op(p), n..=n)
        }))
        .prop_map(|(slot, ops)| Op::Multi { slot, ops }),
        close_weight => slot().prop_map(|slot| Op::Close { slot }),
    ]
}

pub fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(Profile::Wide), 1..=max)
}

/// Like `ops`, but never short: long runs grow bigger trees.
pub fn long_ops(min: usize, max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(Profile::Wide), min..=max)
}

pub fn dense_ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(Profile::Dense), 1..=max)
}

// ---------------------------------------------------------------------------------------------
// Concrete steps
// ---------------------------------------------------------------------------------------------

/// One transaction-producing event, fully concrete.
#[derive(Debug, Clone)]
pub enum Step {
    CreateSession(i64),
    Req {
        slot: usize,
        session: i64,
        request: Request,
    },
}

/// The zxid and time of the i-th step (epoch 5, so the counter part starts at 1).
pub fn zxid_of(i: usize) -> i64 {
    (5_i64 << 32) + 1 + i as i64
}

pub fn time_of(i: usize) -> i64 {
    1_700_000_000_000 + 7 * i as i64
}

fn create_parts(kind: Kind) -> (OpCode, i32, i64) {
    match kind {
        Kind::Persistent => (OpCode::Create, 0, -1),
        Kind::Ephemeral => (OpCode::Create, 1, -1),
        Kind::PersistentSeq => (OpCode::Create, 2, -1),
        Kind::EphemeralSeq => (OpCode::Create, 3, -1),
        Kind::Container => (OpCode::CreateContainer, 4, -1),
        Kind::Ttl => (OpCode::CreateTtl, 5, 5_000),
        Kind::TtlSeq => (OpCode::CreateTtl, 6, 5_000),
        Kind::TtlZero => (OpCode::CreateTtl, 5, 0),
        Kind::TtlNonTtlMode => (OpCode::CreateTtl, 0, 5_000),
        Kind::TtlViaCreate => (OpCode::Create, 5, -1),
        Kind::BadFlag => (OpCode::Create, 7, -1),
    }
}

fn create_multi_op(
    path: String,
    data: Option<Vec<u8>>,
    acl: Vec<Acl>,
    kind: Kind,
    create2: bool,
) -> MultiOp {
    let (op, flags, ttl) = create_parts(kind);
    if op == OpCode::CreateTtl {
        return MultiOp::CreateTtl(CreateTtlRequest {
            path,
            data,
            acl,
            flags,
            ttl,
        });
    }
    let op = if op == OpCode::Create && create2 {
        OpCode::Create2
    } else {
        op
    };
    MultiOp::Create {
        op,
        req: CreateRequest {
            path,
            data,
            acl,
            flags,
        },
    }
}

fn multi_op_to_request(op: MultiOp) -> Request {
    match op {
        MultiOp::Create { op, req } => Request::Create { op, req },
        MultiOp::CreateTtl(r) => Request::CreateTtl(r),
        MultiOp::Delete(r) => Request::Delete(r),
        MultiOp::SetData(r) => Request::SetData(r),
        MultiOp::Check(r) => Request::Check(r),
        MultiOp::GetChildren(_) | MultiOp::GetData(_) => unreachable!("not generated"),
    }
}

/// Sequential runs of the model produce the steps and everything expected of them.
#[derive(Debug, Default)]
pub struct Scenario {
    pub steps: Vec<Step>,
    pub outcomes: Vec<TxnOutcome>,
    /// Triggers of each step, sorted.
    pub triggers: Vec<Vec<Fired>>,
    /// The model after each step.
    pub models: Vec<Model>,
}

/// Runs `ops` on the model: opens the sessions, resolves each op against the current model
/// state, executes it, and records everything.
pub fn build_scenario(ops: &[Op]) -> Scenario {
    let mut model = Model::new();
    let mut sc = Scenario::default();
    let mut sessions: Vec<i64> = (0..SLOTS).map(first_session).collect();
    let push = |model: &mut Model, sc: &mut Scenario, step: Step| {
        let i = sc.steps.len();
        let mut triggers = Vec::new();
        let outcome = model.exec(&step, zxid_of(i), time_of(i), &mut triggers);
        triggers.sort();
        sc.steps.push(step);
        sc.outcomes.push(outcome);
        sc.triggers.push(triggers);
        sc.models.push(model.clone());
    };
    for &s in &sessions {
        push(&mut model, &mut sc, Step::CreateSession(s));
    }
    for op in ops {
        match op {
            Op::Close { slot } => {
                let session = sessions[*slot];
                push(
                    &mut model,
                    &mut sc,
                    Step::Req {
                        slot: *slot,
                        session,
                        request: Request::CloseSession,
                    },
                );
                sessions[*slot] = session + 1;
                push(&mut model, &mut sc, Step::CreateSession(session + 1));
            }
            Op::Multi { slot, ops } => {
                // Resolve each sub-op against the model as the earlier sub-ops leave it, so
                // "correct" versions and existing paths stay meaningful within the multi.
                let session = sessions[*slot];
                let auth = auth_of(*slot);
                let mut scratch = model.clone();
                let mut multi = Vec::new();
                for sub in ops {
                    let m = scratch.resolve_multi_op(sub);
                    let ctx = MCtx {
                        session,
                        auth: &auth,
                        zxid: zxid_of(sc.steps.len()),
                        time: time_of(sc.steps.len()),
                    };
                    let _ = scratch.single(&ctx, &multi_op_to_request(m.clone()), &mut Vec::new());
                    multi.push(m);
                }
                push(
                    &mut model,
                    &mut sc,
                    Step::Req {
                        slot: *slot,
                        session,
                        request: Request::Multi(multi),
                    },
                );
            }
            single => {
                let (slot, request) = model.resolve(single);
                push(
                    &mut model,
                    &mut sc,
                    Step::Req {
                        slot,
                        session: sessions[slot],
                        request,
                    },
                );
            }
        }
    }
    sc
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

const CONTAINER_OWNER: i64 = i64::MIN;
const TTL_MASK: i64 = 0xff00_0000_0000_0000_u64 as i64;
const TTL_MAX: i64 = 0x00ff_ffff_ffff_ffff;

fn is_ephemeral_owner(owner: i64) -> bool {
    owner != 0 && owner != CONTAINER_OWNER && owner & TTL_MASK != TTL_MASK
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MNode {
    pub data: Option<Vec<u8>>,
    pub acl: Vec<Acl>,
    pub version: i32,
    /// Number of children ever created (ZooKeeper's stored cversion).
    pub creates: i32,
    pub aversion: i32,
    /// Raw ephemeralOwner: session, container marker, TTL marker or 0.
    pub owner: i64,
    pub czxid: i64,
    pub mzxid: i64,
    pub pzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
}

impl MNode {
    fn new(data: Option<Vec<u8>>, acl: Vec<Acl>, owner: i64, zxid: i64, time: i64) -> MNode {
        MNode {
            data,
            acl,
            version: 0,
            creates: 0,
            aversion: 0,
            owner,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time,
            mtime: time,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Model {
    pub nodes: BTreeMap<String, MNode>,
    pub sessions: BTreeSet<i64>,
}

/// Who runs a request, and its zxid and time.
pub struct MCtx<'a> {
    pub session: i64,
    pub auth: &'a [Id],
    pub zxid: i64,
    pub time: i64,
}

pub fn parent_path(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// `PathUtils.validatePath`, restricted to what the generated paths can contain.
fn valid_path(path: &str) -> bool {
    if path == "/" {
        return true;
    }
    if !path.starts_with('/') || path.ends_with('/') || path.contains('\0') {
        return false;
    }
    path[1..]
        .split('/')
        .all(|c| !c.is_empty() && c != "." && c != "..")
}

fn is_special(path: &str) -> bool {
    matches!(
        path,
        "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config"
    )
}

fn check_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current + 1)
}

fn check_perm(acl: &[Acl], perm: i32, auth: &[Id]) -> Result<(), ErrorCode> {
    if acl.is_empty() {
        return Ok(());
    }
    for entry in acl.iter().filter(|a| a.perms & perm != 0) {
        if entry.id.scheme == "world" && entry.id.id == "anyone" {
            return Ok(());
        }
        if auth.contains(&entry.id) {
            return Ok(());
        }
    }
    Err(ErrorCode::NoAuth)
}

/// `fixupACL`: dedupe, reject empty and malformed, expand `auth` to the digest identities.
fn fixup(acl: &[Acl], auth: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<Acl> = Vec::new();
    for a in acl {
        if !unique.contains(a) {
            unique.push(a.clone());
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out = Vec::new();
    for a in unique {
        match a.id.scheme.as_ref() {
            "world" if a.id.id == "anyone" => out.push(a),
            "auth" => {
                let digests: Vec<&Id> = auth.iter().filter(|i| i.scheme == "digest").collect();
                if digests.is_empty() {
                    return Err(ErrorCode::InvalidAcl);
                }
                for d in digests {
                    out.push(Acl {
                        perms: a.perms,
                        id: d.clone(),
                    });
                }
            }
            "digest" if a.id.id.matches(':').count() == 1 => out.push(a),
            "ip" if a.id.id.parse::<std::net::IpAddr>().is_ok() => out.push(a),
            _ => return Err(ErrorCode::InvalidAcl),
        }
    }
    Ok(out)
}

impl Default for Model {
    fn default() -> Self {
        Self::new()
    }
}

impl Model {
    /// `/` plus the three system nodes, all with zero stats and the open ACL, except
    /// `/zookeeper/config`: read-only with aversion −1 (`DataTree.addConfigNode` runs
    /// `setACL(configZookeeper, READ_ACL_UNSAFE, -1)`).
    pub fn new() -> Model {
        let open = acl_list(AclSel::Open);
        let mut nodes = BTreeMap::new();
        nodes.insert(
            "/".to_string(),
            MNode::new(Some(vec![]), open.clone(), 0, 0, 0),
        );
        for p in ["/zookeeper", "/zookeeper/quota"] {
            let node = MNode::new(Some(vec![]), open.clone(), 0, 0, 0);
            nodes.insert(p.to_string(), node);
        }
        let mut config = MNode::new(Some(vec![]), acl_list(AclSel::WorldRead), 0, 0, 0);
        config.aversion = -1;
        nodes.insert("/zookeeper/config".to_string(), config);
        Model {
            nodes,
            sessions: BTreeSet::new(),
        }
    }

    pub fn children(&self, path: &str) -> Vec<String> {
        self.nodes
            .keys()
            .filter(|k| k.as_str() != "/" && parent_path(k) == path)
            .map(|k| k[k.rfind('/').unwrap() + 1..].to_string())
            .collect()
    }

    /// The client-visible Stat (`DataNode.copyStat`).
    pub fn stat(&self, path: &str) -> Option<Stat> {
        let n = self.nodes.get(path)?;
        let num_children = self.children(path).len() as i32;
        Some(Stat {
            czxid: n.czxid,
            mzxid: n.mzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            version: n.version,
            cversion: n.creates * 2 - num_children,
            aversion: n.aversion,
            ephemeral_owner: if is_ephemeral_owner(n.owner) {
                n.owner
            } else {
                0
            },
            data_length: n.data.as_ref().map_or(0, |d| d.len() as i32),
            num_children,
            pzxid: n.pzxid,
        })
    }

    pub fn ephemerals(&self) -> BTreeMap<i64, BTreeSet<String>> {
        let mut out: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
        for (p, n) in &self.nodes {
            if is_ephemeral_owner(n.owner) {
                out.entry(n.owner).or_default().insert(p.clone());
            }
        }
        out
    }

    fn paths_of_kind(&self, pred: impl Fn(i64) -> bool) -> BTreeSet<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| pred(n.owner))
            .map(|(p, _)| p.clone())
            .collect()
    }

    pub fn containers(&self) -> BTreeSet<String> {
        self.paths_of_kind(|o| o == CONTAINER_OWNER)
    }

    pub fn ttls(&self) -> BTreeSet<String> {
        self.paths_of_kind(|o| o != CONTAINER_OWNER && o & TTL_MASK == TTL_MASK)
    }

    /// Sum of path and data lengths (the root's path counts as empty, as ZooKeeper's "").
    pub fn data_size(&self) -> u64 {
        self.nodes
            .iter()
            .map(|(p, n)| {
                let path_len = if p == "/" { 0 } else { p.len() };
                (path_len + n.data.as_ref().map_or(0, Vec::len)) as u64
            })
            .sum()
    }

    // --- resolving generated ops ---

    fn resolve_path(&self, sel: &PathSel) -> String {
        // Prefer the nodes the requests made; the root and /zookeeper are reachable through
        // the literal paths anyway.
        let mut user: Vec<&String> = self
            .nodes
            .keys()
            .filter(|p| !is_special(p) && !p.starts_with("/zookeeper/"))
            .collect();
        if user.is_empty() {
            user = self.nodes.keys().collect();
        }
        let pick = |i: usize| user[i % user.len()].clone();
        match sel {
            PathSel::Fixed(p) => p.clone(),
            PathSel::Existing(i) => pick(*i),
            PathSel::Under(i, name) => join(&pick(*i), name),
        }
    }

    fn resolve_ver(&self, path: &str, ver: Ver, acl_version: bool) -> i32 {
        let correct =
            self.nodes
                .get(path)
                .map_or(0, |n| if acl_version { n.aversion } else { n.version });
        match ver {
            Ver::Any => -1,
            Ver::Correct => correct,
            Ver::Stale => correct + 1,
            Ver::Raw(v) => v,
        }
    }

    /// A concrete request for a single (non-multi, non-close) op.
    pub fn resolve(&self, op: &Op) -> (usize, Request) {
        match op {
            Op::SetAcl {
                slot,
                path,
                acl,
                ver,
            } => {
                let path = self.resolve_path(path);
                let version = self.resolve_ver(&path, *ver, true);
                (
                    *slot,
                    Request::SetAcl(SetAclRequest {
                        path,
                        acl: acl_list(*acl),
                        version,
                    }),
                )
            }
            Op::Create { slot, .. }
            | Op::Delete { slot, .. }
            | Op::SetData { slot, .. }
            | Op::Check { slot, .. } => (*slot, multi_op_to_request(self.resolve_multi_op(op))),
            Op::Multi { .. } | Op::Close { .. } => unreachable!("handled by build_scenario"),
        }
    }

    pub fn resolve_multi_op(&self, op: &Op) -> MultiOp {
        match op {
            Op::Create {
                path,
                data,
                acl,
                kind,
                create2,
                ..
            } => create_multi_op(
                self.resolve_path(path),
                data.clone(),
                acl_list(*acl),
                *kind,
                *create2,
            ),
            Op::Delete { path, ver, .. } => {
                let path = self.resolve_path(path);
                let version = self.resolve_ver(&path, *ver, false);
                MultiOp::Delete(PathAndVersion { path, version })
            }
            Op::SetData {
                path, data, ver, ..
            } => {
                let path = self.resolve_path(path);
                let version = self.resolve_ver(&path, *ver, false);
                MultiOp::SetData(SetDataRequest {
                    path,
                    data: data.clone(),
                    version,
                })
            }
            Op::Check { path, ver, .. } => {
                let path = self.resolve_path(path);
                let version = self.resolve_ver(&path, *ver, false);
                MultiOp::Check(PathAndVersion { path, version })
            }
            other => unreachable!("not a multi op: {other:?}"),
        }
    }

    // --- executing ---

    pub fn exec(
        &mut self,
        step: &Step,
        zxid: i64,
        time: i64,
        triggers: &mut Vec<Fired>,
    ) -> TxnOutcome {
        match step {
            Step::CreateSession(id) => {
                self.sessions.insert(*id);
                TxnOutcome::SessionCreated
            }
            Step::Req {
                slot,
                session,
                request,
            } => {
                let auth = auth_of(*slot);
                let ctx = MCtx {
                    session: *session,
                    auth: &auth,
                    zxid,
                    time,
                };
                match request {
                    Request::Multi(ops) => self.multi(&ctx, ops, triggers),
                    Request::CloseSession => {
                        self.close_session(&ctx, triggers);
                        TxnOutcome::SessionClosed
                    }
                    other => self
                        .single(&ctx, other, triggers)
                        .unwrap_or_else(TxnOutcome::Error),
                }
            }
        }
    }

    pub fn single(
        &mut self,
        ctx: &MCtx<'_>,
        request: &Request,
        triggers: &mut Vec<Fired>,
    ) -> Result<TxnOutcome, ErrorCode> {
        match request {
            Request::Create { op, req } => self.create(ctx, *op, req, -1, triggers),
            Request::CreateTtl(r) => {
                let req = CreateRequest {
                    path: r.path.clone(),
                    data: r.data.clone(),
                    acl: r.acl.clone(),
                    flags: r.flags,
                };
                self.create(ctx, OpCode::CreateTtl, &req, r.ttl, triggers)
            }
            Request::Delete(r) => self.delete(ctx, &r.path, r.version, triggers),
            Request::SetData(r) => self.set_data(ctx, r, triggers),
            Request::SetAcl(r) => self.set_acl(ctx, r),
            Request::Check(r) => self.check(ctx, &r.path, r.version),
            other => unreachable!("not generated: {other:?}"),
        }
    }

    /// `pRequest2TxnCreate` then `DataTree.createNode`.
    fn create(
        &mut self,
        ctx: &MCtx<'_>,
        op: OpCode,
        req: &CreateRequest,
        ttl: i64,
        triggers: &mut Vec<Fired>,
    ) -> Result<TxnOutcome, ErrorCode> {
        if !(0..=6).contains(&req.flags) {
            return Err(ErrorCode::BadArguments);
        }
        let is_ttl = matches!(req.flags, 5 | 6);
        let sequential = matches!(req.flags, 2 | 3 | 6);
        let ttl_ok = if is_ttl {
            ttl > 0 && ttl <= TTL_MAX
        } else {
            ttl < 0
        };
        if !ttl_ok {
            return Err(ErrorCode::BadArguments);
        }
        let Some(last_slash) = req.path.rfind('/') else {
            return Err(ErrorCode::BadArguments);
        };
        if req.path.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        let parent = if last_slash == 0 {
            "/".to_string()
        } else {
            req.path[..last_slash].to_string()
        };
        let acl = fixup(&req.acl, ctx.auth)?;
        let parent_node = self.nodes.get(&parent).ok_or(ErrorCode::NoNode)?;
        check_perm(&parent_node.acl, perms::CREATE, ctx.auth)?;
        let mut path = req.path.clone();
        if sequential {
            path.push_str(&format!("{:010}", parent_node.creates));
        }
        if !valid_path(&path) {
            return Err(ErrorCode::BadArguments);
        }
        if self.nodes.contains_key(&path) {
            return Err(ErrorCode::NodeExists);
        }
        if is_ephemeral_owner(parent_node.owner) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let owner = match req.flags {
            4 => CONTAINER_OWNER,
            5 | 6 => TTL_MASK | ttl,
            1 | 3 => ctx.session,
            _ => 0,
        };
        // The op code decides the transaction type; the generator keeps it consistent with
        // the flags, as real clients do.
        debug_assert_eq!(op == OpCode::CreateContainer, req.flags == 4);
        let parent_node = self.nodes.get_mut(&parent).unwrap();
        parent_node.creates += 1;
        parent_node.pzxid = ctx.zxid;
        self.nodes.insert(
            path.clone(),
            MNode::new(req.data.clone(), acl, owner, ctx.zxid, ctx.time),
        );
        triggers.push(Fired::Created(path.clone()));
        triggers.push(Fired::ChildrenChanged(parent));
        let stat = self.stat(&path).unwrap();
        Ok(TxnOutcome::Created { path, stat })
    }

    /// `pRequest2Txn` delete then `DataTree.deleteNode`.
    fn delete(
        &mut self,
        ctx: &MCtx<'_>,
        path: &str,
        version: i32,
        triggers: &mut Vec<Fired>,
    ) -> Result<TxnOutcome, ErrorCode> {
        let Some(last_slash) = path.rfind('/') else {
            return Err(ErrorCode::BadArguments);
        };
        if path.contains('\0') || is_special(path) {
            return Err(ErrorCode::BadArguments);
        }
        let parent = if last_slash == 0 {
            "/".to_string()
        } else {
            path[..last_slash].to_string()
        };
        let parent_node = self.nodes.get(&parent).ok_or(ErrorCode::NoNode)?;
        check_perm(&parent_node.acl, perms::DELETE, ctx.auth)?;
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        check_version(node.version, version)?;
        if !self.children(path).is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        self.remove(path, ctx.zxid, triggers);
        Ok(TxnOutcome::Deleted)
    }

    fn remove(&mut self, path: &str, zxid: i64, triggers: &mut Vec<Fired>) {
        self.nodes.remove(path);
        let parent = parent_path(path).to_string();
        let p = self.nodes.get_mut(&parent).unwrap();
        p.pzxid = p.pzxid.max(zxid);
        triggers.push(Fired::Deleted(path.to_string()));
        triggers.push(Fired::ChildrenChanged(parent));
    }

    fn set_data(
        &mut self,
        ctx: &MCtx<'_>,
        r: &SetDataRequest,
        triggers: &mut Vec<Fired>,
    ) -> Result<TxnOutcome, ErrorCode> {
        if !valid_path(&r.path) {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.nodes.get_mut(&r.path).ok_or(ErrorCode::NoNode)?;
        check_perm(&node.acl, perms::WRITE, ctx.auth)?;
        node.version = check_version(node.version, r.version)?;
        node.data = r.data.clone();
        node.mzxid = ctx.zxid;
        node.mtime = ctx.time;
        triggers.push(Fired::DataChanged(r.path.clone()));
        Ok(TxnOutcome::Updated(self.stat(&r.path).unwrap()))
    }

    fn set_acl(&mut self, ctx: &MCtx<'_>, r: &SetAclRequest) -> Result<TxnOutcome, ErrorCode> {
        if !valid_path(&r.path) {
            return Err(ErrorCode::BadArguments);
        }
        let acl = fixup(&r.acl, ctx.auth)?;
        let node = self.nodes.get_mut(&r.path).ok_or(ErrorCode::NoNode)?;
        check_perm(&node.acl, perms::ADMIN, ctx.auth)?;
        node.aversion = check_version(node.aversion, r.version)?;
        node.acl = acl;
        Ok(TxnOutcome::Updated(self.stat(&r.path).unwrap()))
    }

    fn check(&mut self, ctx: &MCtx<'_>, path: &str, version: i32) -> Result<TxnOutcome, ErrorCode> {
        if !valid_path(path) {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        check_perm(&node.acl, perms::READ, ctx.auth)?;
        check_version(node.version, version)?;
        Ok(TxnOutcome::Checked)
    }

    /// All or nothing; on failure every op reports 0 before the failing one, its code at it
    /// and RuntimeInconsistency (−2) after it (`DataTree.processTxn` for a multi).
    fn multi(&mut self, ctx: &MCtx<'_>, ops: &[MultiOp], triggers: &mut Vec<Fired>) -> TxnOutcome {
        let mut scratch = self.clone();
        let mut scratch_triggers = Vec::new();
        let mut results = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let request = multi_op_to_request(op.clone());
            match scratch.single(ctx, &request, &mut scratch_triggers) {
                Ok(outcome) => results.push(outcome),
                Err(code) => {
                    let mut failed = vec![TxnOutcome::Error(ErrorCode::Ok); i];
                    failed.push(TxnOutcome::Error(code));
                    failed.resize(
                        ops.len(),
                        TxnOutcome::Error(ErrorCode::RuntimeInconsistency),
                    );
                    return TxnOutcome::Multi(failed);
                }
            }
        }
        *self = scratch;
        triggers.extend(scratch_triggers);
        TxnOutcome::Multi(results)
    }

    fn close_session(&mut self, ctx: &MCtx<'_>, triggers: &mut Vec<Fired>) {
        self.sessions.remove(&ctx.session);
        let mine: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == ctx.session)
            .map(|(p, _)| p.clone())
            .collect();
        for p in mine {
            self.remove(&p, ctx.zxid, triggers);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The system under test
// ---------------------------------------------------------------------------------------------

/// The real preparer and tree, with the log of every transaction applied.
#[derive(Debug, Default)]
pub struct Sut {
    pub tree: DataTree,
    pub prep: Prep,
    pub log: Vec<Txn>,
}

impl Sut {
    pub fn new() -> Sut {
        Sut::default()
    }

    /// Prepares the i-th step with zxid_of(i).
    pub fn prepare(&mut self, step: &Step, i: usize) -> Txn {
        let zxid = zxid_of(i);
        let time_ms = time_of(i);
        match step {
            Step::CreateSession(session) => {
                let ctx = PrepContext {
                    session_id: *session,
                    cxid: 0,
                    zxid,
                    time_ms,
                    auth_ids: &[],
                    extended_types_enabled: true,
                    sasl_provider: false,
                };
                self.prep.prepare_create_session(&ctx, 30_000)
            }
            Step::Req {
                slot,
                session,
                request,
            } => {
                let auth = auth_of(*slot);
                let ctx = PrepContext {
                    session_id: *session,
                    cxid: i as i32,
                    zxid,
                    time_ms,
                    auth_ids: &auth,
                    extended_types_enabled: true,
                    sasl_provider: false,
                };
                self.prep.prepare(&self.tree, &ctx, request)
            }
        }
    }

    /// Applies a prepared transaction and tells prep it was applied.
    pub fn apply(&mut self, txn: &Txn) -> (TxnOutcome, Vec<Fired>) {
        let mut triggers = Vec::new();
        let outcome = self.tree.apply(txn, &mut triggers);
        self.prep.applied(txn.header.zxid);
        self.log.push(txn.clone());
        let mut fired: Vec<Fired> = triggers.iter().map(fired).collect();
        fired.sort();
        (outcome, fired)
    }

    /// Prepares and applies the i-th step.
    pub fn step(&mut self, step: &Step, i: usize) -> (TxnOutcome, Vec<Fired>) {
        let txn = self.prepare(step, i);
        self.apply(&txn)
    }
}

/// Runs a scenario one request at a time, checking every outcome, trigger set and state.
pub fn run_checked(sc: &Scenario) -> Sut {
    let mut sut = Sut::new();
    for (i, step) in sc.steps.iter().enumerate() {
        let (outcome, triggers) = sut.step(step, i);
        assert_eq!(
            outcome, sc.outcomes[i],
            "step {i}: outcome of {step:?} (left: tree, right: model)"
        );
        assert_eq!(triggers, sc.triggers[i], "step {i}: triggers of {step:?}");
        assert!(
            sut.prep.pending().is_empty(),
            "step {i}: pending changes left after apply: {:?}",
            sut.prep.pending()
        );
        assert_matches_model(
            &sut.tree,
            &sc.models[i],
            zxid_of(i),
            &format!("after step {i} ({step:?})"),
        );
    }
    sut
}

// ---------------------------------------------------------------------------------------------
// State comparison
// ---------------------------------------------------------------------------------------------

/// Everything observable about one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    pub stat: Stat,
    pub data: Option<Vec<u8>>,
    pub acl: Vec<Acl>,
    pub children: Vec<String>,
    /// Raw ephemeralOwner (container and TTL markers included).
    pub owner: i64,
    /// Stored cversion (number of creates).
    pub creates: i32,
}

pub fn view_tree(tree: &DataTree) -> BTreeMap<String, NodeView> {
    let mut out = BTreeMap::new();
    tree.for_each(|path, node| {
        out.insert(
            path.to_string(),
            NodeView {
                stat: node.stat(),
                data: node.data_vec(),
                acl: node.acl.to_vec(),
                children: node.children.keys().map(|k| k.to_string()).collect(),
                owner: node.stat.ephemeral_owner,
                creates: node.stat.cversion,
            },
        );
    });
    out
}

pub fn view_model(model: &Model) -> BTreeMap<String, NodeView> {
    model
        .nodes
        .iter()
        .map(|(p, n)| {
            (
                p.clone(),
                NodeView {
                    stat: model.stat(p).unwrap(),
                    data: n.data.clone(),
                    acl: n.acl.clone(),
                    children: model.children(p),
                    owner: n.owner,
                    creates: n.creates,
                },
            )
        })
        .collect()
}

pub fn tree_ephemerals(tree: &DataTree) -> BTreeMap<i64, BTreeSet<String>> {
    tree.sessions_with_ephemerals()
        .map(|(s, paths)| (*s, paths.into_iter().map(str::to_string).collect()))
        .collect()
}

pub fn tree_sessions(tree: &DataTree) -> BTreeSet<i64> {
    tree.sessions().keys().copied().collect()
}

/// Asserts the tree holds exactly the model's state.
pub fn assert_matches_model(tree: &DataTree, model: &Model, last_zxid: i64, when: &str) {
    assert_eq!(view_tree(tree), view_model(model), "nodes differ {when}");
    assert_eq!(
        tree_sessions(tree),
        model.sessions,
        "sessions differ {when}"
    );
    assert_eq!(
        tree_ephemerals(tree),
        model.ephemerals(),
        "ephemerals differ {when}"
    );
    assert_eq!(
        tree.containers(),
        &model.containers(),
        "containers differ {when}"
    );
    assert_eq!(tree.ttls(), &model.ttls(), "ttls differ {when}");
    assert_eq!(tree.node_count(), model.nodes.len(), "node count {when}");
    assert_eq!(
        tree.descendant_count("/"),
        Some(model.nodes.len() - 1),
        "descendants {when}"
    );
    assert_eq!(
        tree.approximate_data_size(),
        model.data_size(),
        "data size {when}"
    );
    assert_eq!(tree.last_processed_zxid(), last_zxid, "last zxid {when}");
}

/// Asserts two trees hold the same state and digest.
pub fn assert_same_tree(a: &DataTree, b: &DataTree, when: &str) {
    assert_eq!(view_tree(a), view_tree(b), "nodes differ {when}");
    assert_eq!(tree_sessions(a), tree_sessions(b), "sessions differ {when}");
    assert_eq!(
        tree_ephemerals(a),
        tree_ephemerals(b),
        "ephemerals differ {when}"
    );
    assert_eq!(a.containers(), b.containers(), "containers differ {when}");
    assert_eq!(a.ttls(), b.ttls(), "ttls differ {when}");
    assert_eq!(a.node_count(), b.node_count(), "node count {when}");
    assert_eq!(
        a.approximate_data_size(),
        b.approximate_data_size(),
        "data size {when}"
    );
    assert_eq!(a.digest(), b.digest(), "digest differs {when}");
}
