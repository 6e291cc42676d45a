package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// cleanupTimeout bounds the wait for the server's background reaper to
// remove an empty container or an expired TTL node. Apache ZooKeeper scans
// once a minute by default (znode.container.checkIntervalMs).
const cleanupTimeout = 150 * time.Second

func TestContainerIsRemovedWhenEmptied(t *testing.T) {
	t.Parallel()
	c := dial(t, "container")
	root := testRoot(t, c)
	box := root + "/box"
	if got, err := c.CreateContainer(box, []byte("c"), zk.FlagContainer, openACL); err != nil || got != box {
		t.Fatalf("createContainer = (%q, %v), want %q", got, err, box)
	}
	stat := mustExist(t, c, box, true)
	// ZooKeeper stores a container marker in ephemeralOwner but shows
	// clients 0 for containers and TTL nodes.
	if stat.EphemeralOwner != 0 {
		t.Errorf("container ephemeralOwner = %#x, want 0", stat.EphemeralOwner)
	}
	// A container that has never had a child is kept; one that had
	// children and lost them all is reaped.
	mustCreate(t, c, box+"/item", nil, zk.FlagPersistent)
	if err := c.Delete(box+"/item", -1); err != nil {
		t.Fatalf("delete child: %v", err)
	}
	waitGone(t, c, box)
}

func TestTTLNodeExpires(t *testing.T) {
	t.Parallel()
	c := dial(t, "ttl")
	root := testRoot(t, c)
	ttl := 500 * time.Millisecond
	node := root + "/ttl"
	if got, err := c.CreateTTL(node, []byte("t"), zk.FlagTTL, openACL, ttl); err != nil || got != node {
		t.Fatalf("createTTL = (%q, %v), want %q", got, err, node)
	}
	stat := mustExist(t, c, node, true)
	if stat.EphemeralOwner != 0 {
		t.Errorf("TTL node ephemeralOwner = %#x, want 0", stat.EphemeralOwner)
	}
	seq, err := c.CreateTTL(root+"/seq-", nil, zk.FlagPersistentSequentialWithTTL, openACL, ttl)
	if want := fmt.Sprintf("%s/seq-%010d", root, 1); err != nil || seq != want {
		t.Fatalf("sequential createTTL = (%q, %v), want %q", seq, err, want)
	}
	waitGone(t, c, node)
	waitGone(t, c, seq)
}

func TestTTLMustBePositive(t *testing.T) {
	c := dial(t, "ttl-bad")
	root := testRoot(t, c)
	_, err := c.CreateTTL(root+"/zero", nil, zk.FlagTTL, openACL, 0)
	expectErr(t, "createTTL with ttl 0", err, zk.ErrBadArguments)
	mustExist(t, c, root+"/zero", false)
}

// waitGone waits, bounded, for the server to delete path by itself.
func waitGone(t *testing.T, c *client, path string) {
	t.Helper()
	ok, _, ch, err := c.ExistsW(path)
	if err != nil {
		t.Fatalf("existsW %s: %v", path, err)
	}
	if !ok {
		return
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("watch on %s: %v, want NodeDeleted", path, ev.Type)
		}
	case <-time.After(cleanupTimeout):
		t.Fatalf("%s still exists %v later; the server never reaped it", path, cleanupTimeout)
	}
	mustExist(t, c, path, false)
}
