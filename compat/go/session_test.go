package compat

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	// expiringSessionTimeout is asked for by the session that is made to
	// expire; servers clamp it to [2, 20] ticks by default.
	expiringSessionTimeout = 2 * time.Second
	// expiryTimeout bounds how long the server may take to notice that a
	// silent session has run out (timeout plus a tick, with plenty of slack).
	expiryTimeout = 45 * time.Second
)

func TestSessionExpiryRemovesEphemerals(t *testing.T) {
	observer := dial(t, "observer")
	root := testRoot(t, observer)
	px := startProxy(t, serverAddr)
	victim := connect(t, "victim", px.addr(), expiringSessionTimeout)
	oldSession := victim.SessionID()

	eph := root + "/eph"
	mustCreate(t, victim, eph, []byte("owned"), zk.FlagEphemeral)
	stat := mustExist(t, observer, eph, true)
	if stat.EphemeralOwner != oldSession {
		t.Fatalf("ephemeralOwner = %#x, want the creating session %#x", stat.EphemeralOwner, oldSession)
	}
	_, _, deleted, err := observer.GetW(eph)
	if err != nil {
		t.Fatalf("getW: %v", err)
	}
	_, _, victimWatch, err := victim.GetW(root)
	if err != nil {
		t.Fatalf("victim getW: %v", err)
	}

	// Cut the victim off: its pings no longer reach the server.
	before := victim.rec.len()
	px.pause()
	select {
	case ev := <-deleted:
		if ev.Type != zk.EventNodeDeleted || ev.Path != eph {
			t.Fatalf("observer watch = {%v %q}, want NodeDeleted %s", ev.Type, ev.Path, eph)
		}
	case <-time.After(expiryTimeout):
		t.Fatalf("ephemeral %s still present %v after its session went silent", eph, expiryTimeout)
	}
	mustExist(t, observer, eph, false)
	victim.waitState(before, zk.StateDisconnected, eventTimeout)

	// Reconnecting with the dead session id must be answered as expired.
	px.resume()
	expired := victim.waitState(before, zk.StateExpired, expiryTimeout)
	// go-zookeeper then fails the old watches and opens a new session.
	select {
	case ev := <-victimWatch:
		if ev.Type != zk.EventNotWatching || ev.Err != zk.ErrSessionExpired {
			t.Errorf("victim's old watch got {%v err=%v}, want NotWatching with ErrSessionExpired", ev.Type, ev.Err)
		}
	case <-time.After(eventTimeout):
		t.Errorf("victim's old watch was not released after expiry")
	}
	victim.waitState(expired, zk.StateHasSession, connectTimeout)
	if id := victim.SessionID(); id == oldSession || id == 0 {
		t.Errorf("session id after expiry = %#x, want a new one (old %#x)", id, oldSession)
	}
	if _, err := victim.Create(eph, nil, zk.FlagEphemeral, openACL); err != nil {
		t.Errorf("new session cannot recreate %s: %v", eph, err)
	}
}

func TestCloseRemovesEphemeralsAtOnce(t *testing.T) {
	observer := dial(t, "observer")
	root := testRoot(t, observer)
	owner := dial(t, "owner")
	eph := root + "/eph"
	seq := mustCreate(t, owner, root+"/seq-", nil, zk.FlagEphemeralSequential)

	mustCreate(t, owner, eph, nil, zk.FlagEphemeral)
	ok, _, ch, err := observer.ExistsW(eph)
	if err != nil || !ok {
		t.Fatalf("existsW = (%v, %v)", ok, err)
	}
	owner.Close()
	expectWatch(t, ch, zk.EventNodeDeleted, eph)
	mustExist(t, observer, seq, false)
	children, _, err := observer.Children(root)
	if err != nil || len(children) != 0 {
		t.Fatalf("children after close = (%v, %v), want none", children, err)
	}
}

func TestSessionSurvivesReconnect(t *testing.T) {
	observer := dial(t, "observer")
	root := testRoot(t, observer)
	px := startProxy(t, serverAddr)
	c := connect(t, "mover", px.addr(), sessionTimeout)
	session := c.SessionID()
	eph := mustCreate(t, c, root+"/eph", nil, zk.FlagEphemeral)
	node := root + "/watched"
	mustCreate(t, observer, node, []byte("0"), zk.FlagPersistent)
	_, _, ch, err := c.GetW(node)
	if err != nil {
		t.Fatalf("getW: %v", err)
	}

	// Drop the connection briefly (well inside the session timeout) and
	// change the node meanwhile: on reconnect the client re-registers its
	// watch with setWatches and the server must fire it at once.
	before := c.rec.len()
	px.pause()
	if _, err := observer.Set(node, []byte("1"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	px.resume()
	c.waitState(before, zk.StateDisconnected, eventTimeout)
	c.waitState(before, zk.StateHasSession, connectTimeout)
	if c.SessionID() != session {
		t.Fatalf("session id changed across a short disconnect: %#x -> %#x", session, c.SessionID())
	}
	expectWatch(t, ch, zk.EventNodeDataChanged, node)
	mustExist(t, observer, eph, true)
}
