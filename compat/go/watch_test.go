package compat

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper v1.0.4 (the latest release) has no addWatch, so persistent
// and recursive watches cannot be exercised through it.

func TestDataWatchFiresOnSetThenDelete(t *testing.T) {
	watcher := dial(t, "watcher")
	writer := dial(t, "writer")
	root := testRoot(t, writer)
	node := root + "/n"
	mustCreate(t, writer, node, []byte("v0"), zk.FlagPersistent)

	_, _, ch, err := watcher.GetW(node)
	if err != nil {
		t.Fatalf("getW: %v", err)
	}
	if _, err := writer.Set(node, []byte("v1"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	expectWatch(t, ch, zk.EventNodeDataChanged, node)

	_, _, ch, err = watcher.GetW(node)
	if err != nil {
		t.Fatalf("getW again: %v", err)
	}
	if err := writer.Delete(node, -1); err != nil {
		t.Fatalf("delete: %v", err)
	}
	expectWatch(t, ch, zk.EventNodeDeleted, node)
}

func TestWatchesAreOneShot(t *testing.T) {
	watcher := dial(t, "watcher")
	writer := dial(t, "writer")
	root := testRoot(t, writer)
	node := root + "/n"
	mustCreate(t, writer, node, nil, zk.FlagPersistent)

	start := watcher.rec.len()
	if _, _, _, err := watcher.GetW(node); err != nil {
		t.Fatalf("getW: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := writer.Set(node, []byte{byte(i)}, -1); err != nil {
			t.Fatalf("set %d: %v", i, err)
		}
	}
	watcher.barrier(node)
	if evs := watcher.watchEvents(start, node); len(evs) != 1 || evs[0].Type != zk.EventNodeDataChanged {
		t.Fatalf("after 3 sets with one data watch the server sent %d events %v, want exactly one NodeDataChanged", len(evs), evs)
	}

	// The same holds for a child watch: two child creations, one event.
	start = watcher.rec.len()
	if _, _, _, err := watcher.ChildrenW(node); err != nil {
		t.Fatalf("childrenW: %v", err)
	}
	mustCreate(t, writer, node+"/a", nil, zk.FlagPersistent)
	mustCreate(t, writer, node+"/b", nil, zk.FlagPersistent)
	watcher.barrier(node)
	if evs := watcher.watchEvents(start, node); len(evs) != 1 || evs[0].Type != zk.EventNodeChildrenChanged {
		t.Fatalf("after 2 child creates with one child watch the server sent %d events %v, want exactly one NodeChildrenChanged", len(evs), evs)
	}
}

func TestExistsWatchOnMissingNodeFiresCreated(t *testing.T) {
	watcher := dial(t, "watcher")
	writer := dial(t, "writer")
	root := testRoot(t, writer)
	node := root + "/later"

	ok, _, ch, err := watcher.ExistsW(node)
	if err != nil || ok {
		t.Fatalf("existsW on a missing node = (%v, %v), want (false, nil)", ok, err)
	}
	mustCreate(t, writer, node, []byte("x"), zk.FlagPersistent)
	expectWatch(t, ch, zk.EventNodeCreated, node)

	// An exists watch on a present node behaves like a data watch.
	ok, _, ch, err = watcher.ExistsW(node)
	if err != nil || !ok {
		t.Fatalf("existsW on a present node = (%v, %v), want (true, nil)", ok, err)
	}
	if _, err := writer.Set(node, []byte("y"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	expectWatch(t, ch, zk.EventNodeDataChanged, node)

	_, _, ch, err = watcher.ExistsW(node)
	if err != nil {
		t.Fatalf("existsW: %v", err)
	}
	if err := writer.Delete(node, -1); err != nil {
		t.Fatalf("delete: %v", err)
	}
	expectWatch(t, ch, zk.EventNodeDeleted, node)
}

func TestChildWatch(t *testing.T) {
	watcher := dial(t, "watcher")
	writer := dial(t, "writer")
	root := testRoot(t, writer)
	parent := root + "/p"
	mustCreate(t, writer, parent, nil, zk.FlagPersistent)

	children, _, ch, err := watcher.ChildrenW(parent)
	if err != nil || len(children) != 0 {
		t.Fatalf("childrenW = (%v, %v), want no children", children, err)
	}
	mustCreate(t, writer, parent+"/c1", nil, zk.FlagPersistent)
	expectWatch(t, ch, zk.EventNodeChildrenChanged, parent)

	// Data changes of the parent or of a child do not trigger a child watch.
	_, _, ch, err = watcher.ChildrenW(parent)
	if err != nil {
		t.Fatalf("childrenW: %v", err)
	}
	if _, err := writer.Set(parent, []byte("data"), -1); err != nil {
		t.Fatalf("set parent: %v", err)
	}
	if _, err := writer.Set(parent+"/c1", []byte("data"), -1); err != nil {
		t.Fatalf("set child: %v", err)
	}
	watcher.barrier(parent)
	expectNoWatch(t, ch, "child watch after data-only changes")

	// Deleting a child fires it.
	if err := writer.Delete(parent+"/c1", -1); err != nil {
		t.Fatalf("delete child: %v", err)
	}
	expectWatch(t, ch, zk.EventNodeChildrenChanged, parent)

	// Deleting the watched node itself fires NodeDeleted on a child watch.
	if _, _, ch, err = watcher.ChildrenW(parent); err != nil {
		t.Fatalf("childrenW: %v", err)
	}
	if err := writer.Delete(parent, -1); err != nil {
		t.Fatalf("delete parent: %v", err)
	}
	expectWatch(t, ch, zk.EventNodeDeleted, parent)
}

func TestWatchOnOwnWriteAndNoEventWithoutWatch(t *testing.T) {
	c := dial(t, "single")
	root := testRoot(t, c)
	node := root + "/n"
	mustCreate(t, c, node, nil, zk.FlagPersistent)

	// A session's own write triggers its own watch.
	_, _, ch, err := c.GetW(node)
	if err != nil {
		t.Fatalf("getW: %v", err)
	}
	if _, err := c.Set(node, []byte("1"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	expectWatch(t, ch, zk.EventNodeDataChanged, node)

	// A plain read registers nothing.
	start := c.rec.len()
	mustGet(t, c, node)
	if _, err := c.Set(node, []byte("2"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	c.barrier(node)
	if evs := c.watchEvents(start, node); len(evs) != 0 {
		t.Fatalf("got watch events %v without a watch", evs)
	}
}

// A client sees a watch event before it can see the state after the change
// (ZooKeeper's watch ordering guarantee): the server must queue the event
// ahead of the reply to any later read on the watching session.
func TestWatchEventPrecedesNewState(t *testing.T) {
	watcher := dial(t, "watcher")
	writer := dial(t, "writer")
	root := testRoot(t, writer)
	node := root + "/n"
	mustCreate(t, writer, node, []byte("old"), zk.FlagPersistent)

	for i := 0; i < 20; i++ {
		start := watcher.rec.len()
		if _, _, _, err := watcher.GetW(node); err != nil {
			t.Fatalf("getW: %v", err)
		}
		value := []byte{'v', byte('0' + i%10)}
		if _, err := writer.Set(node, value, -1); err != nil {
			t.Fatalf("set: %v", err)
		}
		data, _ := mustGet(t, watcher, node)
		if string(data) != string(value) {
			t.Fatalf("round %d: read %q after the write of %q completed", i, data, value)
		}
		// go-zookeeper records events in its single receive loop, so an
		// event sent before the reply is already recorded here.
		if evs := watcher.watchEvents(start, node); len(evs) != 1 {
			t.Fatalf("round %d: saw the new data but %d watch events before it, want 1", i, len(evs))
		}
	}
}
