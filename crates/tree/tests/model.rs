//! `Prep` + `DataTree` against a simple reference model of ZooKeeper's tree.
//!
//! * `matches_model`: random request sequences (every create mode, three sessions with
//!   different identities, digest/ip/auth ACLs, versions right and wrong, multis that fail
//!   mid-way, closeSession) run one at a time; after every request the outcome, the watch
//!   triggers and the whole tree (every Stat field, data, ACL, children, sessions, ephemerals,
//!   containers, TTLs, sizes) must equal the model's.
//! * `pipelined_*`: the same requests prepared ahead of apply, in batches (all of a batch
//!   prepared before any of it is applied, as while a group fsync runs) or in random
//!   prepare/apply interleavings, must produce identical transactions, outcomes and states
//!   (this exercises `PendingChanges`). The `_dense` variant uses three paths and mostly
//!   ephemerals and session closes, so that pending requests collide.
//! * Deterministic checks of sequential naming, the system nodes, ACL order of checks and
//!   regressions found by the properties.

mod common;

use common::*;
use proptest::prelude::*;
use proto::multi::MultiOp;
use proto::request::Request;
use proto::watch::perms;
use proto::{Acl, CreateRequest, ErrorCode, Id, OpCode, PathAndVersion, SetAclRequest};
use tree::TxnOutcome;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn matches_model(ops in prop_oneof![ops(40), long_ops(60, 150)]) {
        let sc = build_scenario(&ops);
        run_checked(&sc);
    }
}

/// One move of a pipelined server: prepare the next request, or apply the oldest prepared one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Prepare,
    Apply,
}

/// Runs the scenario following `acts` (a Prepare with nothing left to prepare, or with
/// `window` transactions already waiting, applies instead; an Apply with nothing prepared
/// prepares instead), then drains. After every apply the outcome, the triggers and the whole
/// tree must be the model's after that request.
fn run_schedule(sc: &Scenario, acts: &[Act], window: usize) -> Sut {
    let mut sut = Sut::new();
    let mut queue = std::collections::VecDeque::new();
    let (mut prepared, mut applied) = (0, 0);
    let mut acts = acts.iter().copied();
    while applied < sc.steps.len() {
        let want = acts.next().unwrap_or(Act::Prepare);
        let can_prepare = prepared < sc.steps.len() && queue.len() < window;
        if queue.is_empty() || (want == Act::Prepare && can_prepare) {
            queue.push_back(sut.prepare(&sc.steps[prepared], prepared));
            prepared += 1;
            continue;
        }
        let txn = queue.pop_front().expect("something prepared");
        let k = applied;
        let (outcome, triggers) = sut.apply(&txn);
        applied += 1;
        let when = format!(
            "step {k} ({:?}) with {} prepared ahead",
            sc.steps[k],
            queue.len()
        );
        assert_eq!(
            outcome, sc.outcomes[k],
            "{when}: outcome (left: pipelined, right: model)"
        );
        assert_eq!(triggers, sc.triggers[k], "{when}: triggers");
        assert_matches_model(
            &sut.tree,
            &sc.models[k],
            zxid_of(k),
            &format!("after {when}"),
        );
        if queue.is_empty() {
            assert!(
                sut.prep.pending().is_empty(),
                "pending changes left after {when}"
            );
        }
    }
    sut
}

/// Batches: prepare n, then apply those n (as while a group fsync runs).
fn batch_schedule(batches: &[usize], steps: usize) -> Vec<Act> {
    let mut acts = Vec::new();
    for &n in batches.iter().cycle().take(steps) {
        acts.extend(std::iter::repeat_n(Act::Prepare, n));
        acts.extend(std::iter::repeat_n(Act::Apply, n));
    }
    acts
}

fn check_pipelined(ops: &[Op], acts: &[Act], window: usize) {
    let sc = build_scenario(ops);
    let sequential = run_checked(&sc);
    let pipelined = run_schedule(&sc, acts, window);
    for (k, (a, b)) in sequential.log.iter().zip(&pipelined.log).enumerate() {
        assert_eq!(
            a, b,
            "step {k} ({:?}): transaction (left: one at a time, right: pipelined)",
            sc.steps[k]
        );
    }
    assert_same_tree(&sequential.tree, &pipelined.tree, "at the end");
}

fn acts() -> impl Strategy<Value = Vec<Act>> {
    prop::collection::vec(prop_oneof![Just(Act::Prepare), Just(Act::Apply)], 0..300)
}

proptest! {
    #![proptest_config(config(192))]

    /// The wide request mix, cut into batches of 1..=6 prepared together.
    #[test]
    fn pipelined_batches_match_sequential(
        ops in ops(50),
        batches in prop::collection::vec(1usize..=6, 1..8),
    ) {
        check_pipelined(&ops, &batch_schedule(&batches, 200), usize::MAX);
    }

    /// The wide request mix with prep running ahead of apply by up to 8 in any interleaving.
    #[test]
    fn pipelined_interleavings_match_sequential(ops in ops(50), acts in acts()) {
        check_pipelined(&ops, &acts, 8);
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Few paths, many ephemerals and session closes: requests prepared together often touch
    /// the same node from different sessions (this is what finds closeSession prep mistakes).
    #[test]
    fn pipelined_dense_matches_sequential(
        ops in dense_ops(40),
        batches in prop::collection::vec(2usize..=8, 1..6),
        acts in acts(),
        interleave in any::<bool>(),
    ) {
        if interleave {
            check_pipelined(&ops, &acts, 8);
        } else {
            check_pipelined(&ops, &batch_schedule(&batches, 200), usize::MAX);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic checks
// ---------------------------------------------------------------------------------------------

/// A tiny imperative harness over `Sut` for hand-written sequences.
struct Run {
    sut: Sut,
    i: usize,
}

impl Run {
    fn new() -> Run {
        let mut run = Run {
            sut: Sut::new(),
            i: 0,
        };
        for slot in 0..SLOTS {
            run.step(Step::CreateSession(first_session(slot)));
        }
        run
    }

    fn step(&mut self, step: Step) -> TxnOutcome {
        let (outcome, _) = self.sut.step(&step, self.i);
        self.i += 1;
        outcome
    }

    fn req(&mut self, slot: usize, request: Request) -> TxnOutcome {
        self.step(Step::Req {
            slot,
            session: first_session(slot),
            request,
        })
    }

    fn create(&mut self, slot: usize, path: &str, flags: i32, acl: Vec<Acl>) -> TxnOutcome {
        self.req(slot, create(path, flags, acl))
    }

    fn delete(&mut self, slot: usize, path: &str, version: i32) -> TxnOutcome {
        self.req(
            slot,
            Request::Delete(PathAndVersion {
                path: path.into(),
                version,
            }),
        )
    }
}

fn create(path: &str, flags: i32, acl: Vec<Acl>) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path: path.into(),
            data: Some(b"x".to_vec()),
            acl,
            flags,
        },
    }
}

fn open() -> Vec<Acl> {
    acl_list(AclSel::Open)
}

fn created_path(outcome: &TxnOutcome) -> String {
    match outcome {
        TxnOutcome::Created { path, .. } => path.clone(),
        other => panic!("expected a create, got {other:?}"),
    }
}

#[test]
fn system_nodes_exist_and_cannot_be_deleted() {
    let mut run = Run::new();
    let tree = &run.sut.tree;
    assert_eq!(tree.children("/"), Some(vec!["zookeeper".to_string()]));
    assert_eq!(
        tree.children("/zookeeper"),
        Some(vec!["config".to_string(), "quota".to_string()])
    );
    for p in ["/zookeeper/quota", "/zookeeper/config"] {
        assert_eq!(tree.children(p), Some(vec![]), "{p}");
    }
    // As ZooKeeper reports them: all zero, cversion = 2 × 0 creates − children.
    assert_eq!(tree.stat("/").unwrap().cversion, -1);
    assert_eq!(tree.stat("/zookeeper").unwrap().cversion, -2);
    // The config node is read-only for everyone, set with version −1 (ZOOKEEPER-2014).
    let config = tree.get("/zookeeper/config").unwrap();
    assert_eq!(config.acl.to_vec(), acl_list(AclSel::WorldRead));
    assert_eq!(config.stat.aversion, -1);
    let digest = tree.digest();
    for p in ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
        for version in [-1, 0] {
            assert_eq!(
                run.delete(0, p, version),
                TxnOutcome::Error(ErrorCode::BadArguments),
                "delete {p} version {version}"
            );
        }
        let multi = Request::Multi(vec![
            MultiOp::Check(PathAndVersion {
                path: "/zookeeper".into(),
                version: -1,
            }),
            MultiOp::Delete(PathAndVersion {
                path: p.into(),
                version: -1,
            }),
            MultiOp::Delete(PathAndVersion {
                path: "/nothing".into(),
                version: -1,
            }),
        ]);
        assert_eq!(
            run.req(1, multi),
            TxnOutcome::Multi(vec![
                TxnOutcome::Error(ErrorCode::Ok),
                TxnOutcome::Error(ErrorCode::BadArguments),
                TxnOutcome::Error(ErrorCode::RuntimeInconsistency),
            ])
        );
    }
    assert!(run.sut.tree.get("/zookeeper/config").is_some());
    assert_eq!(run.sut.tree.digest(), digest);
}

#[test]
fn sequential_names_count_creates_of_the_parent() {
    let mut run = Run::new();
    run.create(0, "/q", 0, open());
    let mut expected_creates = 0;
    let mut names = Vec::new();
    for round in 0..12 {
        let outcome = match round % 4 {
            // A plain child also advances the counter.
            3 => run.create(0, &format!("/q/plain{round}"), 0, open()),
            r => run.create(r % 3, "/q/n-", if r == 1 { 3 } else { 2 }, open()),
        };
        let path = created_path(&outcome);
        if round % 4 != 3 {
            assert_eq!(
                path,
                format!("/q/n-{expected_creates:010}"),
                "round {round}"
            );
            names.push(path);
        }
        expected_creates += 1;
        // Deleting children never lowers the counter.
        if round % 5 == 4 {
            let victim = names.remove(0);
            assert_eq!(run.delete(0, &victim, -1), TxnOutcome::Deleted);
        }
    }
    let stat = run.sut.tree.stat("/q").unwrap();
    let stored = run.sut.tree.get("/q").unwrap().stat.cversion;
    assert_eq!(stored, expected_creates);
    assert_eq!(stat.cversion, 2 * expected_creates - stat.num_children);
    // The root and paths ending in '/' get a bare counter.
    let root_seq = created_path(&run.create(1, "/", 2, open()));
    let root_creates = run.sut.tree.get("/").unwrap().stat.cversion - 1;
    assert_eq!(root_seq, format!("/{root_creates:010}"));
    let slash = created_path(&run.create(1, "/q/", 2, open()));
    assert_eq!(slash, format!("/q/{expected_creates:010}"));
    // Without the sequential flag those paths are malformed or exist.
    assert_eq!(
        run.create(1, "/q/", 0, open()),
        TxnOutcome::Error(ErrorCode::BadArguments)
    );
    assert_eq!(
        run.create(1, "/", 0, open()),
        TxnOutcome::Error(ErrorCode::NodeExists)
    );
}

#[test]
fn delete_checks_parent_permission_before_existence_and_version() {
    let mut run = Run::new();
    // /locked: alice may do anything, the world may only read.
    let alice_only = acl_list(AclSel::AliceWorldRead);
    assert!(matches!(
        run.create(0, "/locked", 0, alice_only),
        TxnOutcome::Created { .. }
    ));
    assert!(matches!(
        run.create(0, "/locked/child", 0, open()),
        TxnOutcome::Created { .. }
    ));
    // Slot 1 (no identity): NoAuth on the parent comes first, even for a missing node or a
    // wrong version (PrepRequestProcessor: checkACL(parent, DELETE) precedes
    // getRecordForPath(path) and checkAndIncVersion).
    for (path, version) in [
        ("/locked/child", -1),
        ("/locked/missing", -1),
        ("/locked/child", 7),
    ] {
        assert_eq!(
            run.delete(1, path, version),
            TxnOutcome::Error(ErrorCode::NoAuth),
            "{path} {version}"
        );
    }
    // Alice gets the node's own errors.
    assert_eq!(
        run.delete(0, "/locked/missing", -1),
        TxnOutcome::Error(ErrorCode::NoNode)
    );
    assert_eq!(
        run.delete(0, "/locked/child", 7),
        TxnOutcome::Error(ErrorCode::BadVersion)
    );
    assert_eq!(
        run.delete(0, "/locked", 0),
        TxnOutcome::Error(ErrorCode::NotEmpty)
    );
    // A missing parent is NoNode before any permission check.
    assert_eq!(
        run.delete(1, "/nope/x", -1),
        TxnOutcome::Error(ErrorCode::NoNode)
    );
    // The node's own ACL does not matter for its deletion, only its parent's (here open).
    assert_eq!(
        run.delete(1, "/locked", -1),
        TxnOutcome::Error(ErrorCode::NotEmpty)
    );
    assert_eq!(run.delete(0, "/locked/child", 0), TxnOutcome::Deleted);
    assert_eq!(run.delete(0, "/locked", 0), TxnOutcome::Deleted);
}

#[test]
fn set_acl_validates_the_new_acl_before_the_node() {
    let mut run = Run::new();
    run.create(0, "/n", 0, acl_list(AclSel::Alice));
    let set_acl = |path: &str, acl: Vec<Acl>, version: i32| {
        Request::SetAcl(SetAclRequest {
            path: path.into(),
            acl,
            version,
        })
    };
    // fixupACL runs before getRecordForPath: InvalidACL even for a missing node.
    assert_eq!(
        run.req(1, set_acl("/missing", acl_list(AclSel::Auth), -1)),
        TxnOutcome::Error(ErrorCode::InvalidAcl)
    );
    assert_eq!(
        run.req(1, set_acl("/missing", open(), -1)),
        TxnOutcome::Error(ErrorCode::NoNode)
    );
    // ADMIN before the version.
    assert_eq!(
        run.req(2, set_acl("/n", open(), 9)),
        TxnOutcome::Error(ErrorCode::NoAuth)
    );
    assert_eq!(
        run.req(0, set_acl("/n", open(), 9)),
        TxnOutcome::Error(ErrorCode::BadVersion)
    );
    // `auth` expands to alice's digest identity.
    let outcome = run.req(0, set_acl("/n", acl_list(AclSel::Auth), 0));
    assert!(
        matches!(outcome, TxnOutcome::Updated(ref s) if s.aversion == 1),
        "{outcome:?}"
    );
    let node = run.sut.tree.get("/n").unwrap();
    assert_eq!(
        node.acl.to_vec(),
        vec![Acl {
            perms: perms::ALL,
            id: Id {
                scheme: "digest".into(),
                id: alice().into(),
            },
        }]
    );
}

// ---------------------------------------------------------------------------------------------
// Regressions found by the properties above
// ---------------------------------------------------------------------------------------------

/// ZooKeeper looks nodes up by their exact path (`DataTree.getNode` is a map lookup), so a
/// path with an empty component names no node: `delete("//a")` and `delete("/a/")` are
/// NoNode (PrepRequestProcessor: `getRecordForPath(path)` after the parent's ACL check), and
/// `create("/a//b")` is NoNode for the parent `/a/`.
#[test]
fn non_canonical_paths_name_no_node() {
    let mut run = Run::new();
    run.create(0, "/a", 0, open());
    run.create(0, "/a/b", 0, open());
    let digest = run.sut.tree.digest();

    assert_eq!(
        run.delete(0, "//a", -1),
        TxnOutcome::Error(ErrorCode::NoNode)
    );
    assert_eq!(
        run.delete(0, "/a/", -1),
        TxnOutcome::Error(ErrorCode::NoNode)
    );
    assert_eq!(
        run.delete(0, "/a/b/", -1),
        TxnOutcome::Error(ErrorCode::NoNode)
    );
    assert_eq!(
        run.create(0, "/a//b", 0, open()),
        TxnOutcome::Error(ErrorCode::NoNode)
    );
    assert!(run.sut.tree.get("/a/b").is_some());
    assert_eq!(run.sut.tree.digest(), digest);
    assert!(run.sut.prep.pending().is_empty());
}

/// A closing session's ephemeral that a pending delete removed and another session's pending
/// create re-created is not the closing session's any more: ZooKeeper's closeSession prep walks
/// the outstanding changes in order (a delete removes the path from the set, only a record
/// owned by the session adds it), so it neither lists the path nor records it as deleted.
#[test]
fn pipelined_close_session_ignores_ephemeral_recreated_by_another_session() {
    let s0 = first_session(0);
    let s1 = first_session(1);
    let mut steps: Vec<Step> = (0..SLOTS)
        .map(|s| Step::CreateSession(first_session(s)))
        .collect();
    let req = |slot: usize, session: i64, request: Request| Step::Req {
        slot,
        session,
        request,
    };
    steps.push(req(0, s0, create("/e", 1, open())));
    // One batch: delete s0's /e, s1 re-creates /e, s0 closes, then s1 writes /e.
    steps.push(req(
        1,
        s1,
        Request::Delete(PathAndVersion {
            path: "/e".into(),
            version: -1,
        }),
    ));
    steps.push(req(1, s1, create("/e", 1, open())));
    steps.push(req(0, s0, Request::CloseSession));
    steps.push(req(
        1,
        s1,
        Request::SetData(proto::SetDataRequest {
            path: "/e".into(),
            data: None,
            version: 0,
        }),
    ));
    let batch_start = SLOTS + 1;

    let mut sut = Sut::new();
    for (i, step) in steps.iter().enumerate().take(batch_start) {
        sut.step(step, i);
    }
    let txns: Vec<_> = (batch_start..steps.len())
        .map(|i| sut.prepare(&steps[i], i))
        .collect();
    let outcomes: Vec<_> = txns.iter().map(|t| sut.apply(t).0).collect();
    assert_eq!(outcomes[0], TxnOutcome::Deleted);
    assert!(matches!(outcomes[1], TxnOutcome::Created { .. }));
    assert_eq!(outcomes[2], TxnOutcome::SessionClosed);
    assert!(
        matches!(outcomes[3], TxnOutcome::Updated(ref s) if s.version == 1),
        "setData on s1's /e after s0 closed: {:?}",
        outcomes[3]
    );
    match &txns[2].body {
        proto::txn::TxnBody::CloseSession(t) => assert!(
            t.paths_to_delete.is_empty(),
            "closeSession lists {:?}",
            t.paths_to_delete
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(sut.tree.get("/e").unwrap().stat.ephemeral_owner, s1);
}
