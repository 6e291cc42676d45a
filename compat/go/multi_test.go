package compat

import (
	"bytes"
	"testing"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper has no sentinel for RuntimeInconsistency (-2), the code
// ZooKeeper gives the ops after the failing one; it formats it like this.
const runtimeInconsistencyText = "unknown error: -2"

func TestMultiAppliesAllOps(t *testing.T) {
	c := dial(t, "multi")
	watcher := dial(t, "watcher")
	root := testRoot(t, c)
	a, b, created := root+"/a", root+"/b", root+"/c"
	mustCreate(t, c, a, []byte("a0"), zk.FlagPersistent)
	mustCreate(t, c, b, nil, zk.FlagPersistent)
	_, _, dataCh, err := watcher.GetW(a)
	if err != nil {
		t.Fatalf("getW: %v", err)
	}
	_, _, childCh, err := watcher.ChildrenW(root)
	if err != nil {
		t.Fatalf("childrenW: %v", err)
	}

	res, err := c.Multi(
		&zk.CreateRequest{Path: created, Data: []byte("new"), Acl: openACL},
		&zk.SetDataRequest{Path: a, Data: []byte("a1"), Version: 0},
		&zk.DeleteRequest{Path: b, Version: -1},
		&zk.CheckVersionRequest{Path: a, Version: 1},
	)
	if err != nil {
		t.Fatalf("multi: %v", err)
	}
	if len(res) != 4 {
		t.Fatalf("multi returned %d results, want 4", len(res))
	}
	for i, r := range res {
		if r.Error != nil {
			t.Errorf("result %d: error %v, want none", i, r.Error)
		}
	}
	if res[0].String != created {
		t.Errorf("create result path = %q, want %q", res[0].String, created)
	}
	if res[1].Stat == nil || res[1].Stat.Version != 1 || res[1].Stat.DataLength != 2 {
		t.Errorf("setData result stat = %+v, want version 1 and dataLength 2", res[1].Stat)
	}

	if data, _ := mustGet(t, c, created); string(data) != "new" {
		t.Errorf("created node data = %q", data)
	}
	if data, stat := mustGet(t, c, a); string(data) != "a1" || stat.Version != 1 {
		t.Errorf("a = %q version %d, want a1 version 1", data, stat.Version)
	}
	mustExist(t, c, b, false)
	expectWatch(t, dataCh, zk.EventNodeDataChanged, a)
	expectWatch(t, childCh, zk.EventNodeChildrenChanged, root)

	// All ops of one multi commit under one zxid.
	_, createdStat := mustGet(t, c, created)
	_, aStat := mustGet(t, c, a)
	if createdStat.Czxid != aStat.Mzxid {
		t.Errorf("create zxid %#x != setData zxid %#x; a multi is one transaction", createdStat.Czxid, aStat.Mzxid)
	}
}

func TestMultiFailedCheckAppliesNothing(t *testing.T) {
	c := dial(t, "multi")
	watcher := dial(t, "watcher")
	root := testRoot(t, c)
	a, b, created := root+"/a", root+"/b", root+"/c"
	mustCreate(t, c, a, []byte("a0"), zk.FlagPersistent)
	mustCreate(t, c, b, []byte("b0"), zk.FlagPersistent)
	_, _, dataCh, err := watcher.GetW(a)
	if err != nil {
		t.Fatalf("getW: %v", err)
	}
	_, beforeRoot := mustGet(t, c, root)

	res, err := c.Multi(
		&zk.CreateRequest{Path: created, Data: []byte("new"), Acl: openACL},
		&zk.SetDataRequest{Path: a, Data: []byte("a1"), Version: -1},
		&zk.CheckVersionRequest{Path: b, Version: 7},
		&zk.DeleteRequest{Path: b, Version: -1},
	)
	// go-zookeeper returns the first non-zero per-op code as the error.
	expectErr(t, "multi with a failing check", err, zk.ErrBadVersion)
	if len(res) != 4 {
		t.Fatalf("multi returned %d results, want 4 (an outer error code in the reply header would give none)", len(res))
	}
	// ZooKeeper: earlier ops report 0 (rolled back), the failing op its
	// code, later ops RuntimeInconsistency; all as error results.
	for i := 0; i < 2; i++ {
		if res[i].Error != nil || res[i].String != "" || res[i].Stat != nil {
			t.Errorf("result %d = %+v, want a bare OK error result (no path, no stat)", i, res[i])
		}
	}
	if res[2].Error != zk.ErrBadVersion {
		t.Errorf("result 2 error = %v, want %v", res[2].Error, zk.ErrBadVersion)
	}
	if res[3].Error == nil || res[3].Error.Error() != runtimeInconsistencyText {
		t.Errorf("result 3 error = %v, want RuntimeInconsistency (%q)", res[3].Error, runtimeInconsistencyText)
	}

	mustExist(t, c, created, false)
	if data, stat := mustGet(t, c, a); string(data) != "a0" || stat.Version != 0 {
		t.Errorf("a = %q version %d after the failed multi, want a0 version 0", data, stat.Version)
	}
	mustExist(t, c, b, true)
	if _, afterRoot := mustGet(t, c, root); afterRoot.Cversion != beforeRoot.Cversion || afterRoot.Pzxid != beforeRoot.Pzxid {
		t.Errorf("parent cversion/pzxid changed by a failed multi: %d/%#x -> %d/%#x",
			beforeRoot.Cversion, beforeRoot.Pzxid, afterRoot.Cversion, afterRoot.Pzxid)
	}
	watcher.barrier(a)
	expectNoWatch(t, dataCh, "data watch after a failed multi")
}

func TestMultiFirstOpFails(t *testing.T) {
	c := dial(t, "multi")
	root := testRoot(t, c)
	exists, fresh := root+"/exists", root+"/fresh"
	mustCreate(t, c, exists, nil, zk.FlagPersistent)

	res, err := c.Multi(
		&zk.CreateRequest{Path: exists, Acl: openACL},
		&zk.CreateRequest{Path: fresh, Acl: openACL},
		&zk.SetDataRequest{Path: root + "/missing", Data: []byte("x"), Version: -1},
	)
	expectErr(t, "multi creating an existing node", err, zk.ErrNodeExists)
	if len(res) != 3 {
		t.Fatalf("multi returned %d results, want 3", len(res))
	}
	if res[0].Error != zk.ErrNodeExists {
		t.Errorf("result 0 error = %v, want %v", res[0].Error, zk.ErrNodeExists)
	}
	// The later setData on a missing node must not be evaluated on its own:
	// it reports RuntimeInconsistency, not NoNode.
	for i := 1; i < 3; i++ {
		if res[i].Error == nil || res[i].Error.Error() != runtimeInconsistencyText {
			t.Errorf("result %d error = %v, want RuntimeInconsistency", i, res[i].Error)
		}
	}
	mustExist(t, c, fresh, false)
}

func TestMultiOpsSeeEarlierOps(t *testing.T) {
	c := dial(t, "multi")
	root := testRoot(t, c)
	node := root + "/n"

	// Later ops see the effects of earlier ops of the same multi.
	res, err := c.Multi(
		&zk.CreateRequest{Path: node, Data: []byte("0"), Acl: openACL},
		&zk.SetDataRequest{Path: node, Data: []byte("1"), Version: 0},
		&zk.CheckVersionRequest{Path: node, Version: 1},
		&zk.CreateRequest{Path: node + "/child", Acl: openACL},
		&zk.DeleteRequest{Path: node + "/child", Version: 0},
	)
	if err != nil {
		t.Fatalf("multi: %v (results %+v)", err, res)
	}
	data, stat := mustGet(t, c, node)
	if !bytes.Equal(data, []byte("1")) || stat.Version != 1 || stat.NumChildren != 0 || stat.Cversion != 2 {
		t.Errorf("node = %q %+v, want data 1, version 1, no children, cversion 2", data, stat)
	}
}

func TestMultiEmpty(t *testing.T) {
	c := dial(t, "multi")
	res, err := c.Multi()
	if err != nil || len(res) != 0 {
		t.Fatalf("empty multi = (%v, %v), want no results and no error", res, err)
	}
}
