package compat

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	sessionTimeout = 4 * time.Second
	connectTimeout = 10 * time.Second
	eventTimeout   = 10 * time.Second
	// quietPeriod is how long a test listens for an event that must not come,
	// after a barrier that already orders it behind any real event.
	quietPeriod = 300 * time.Millisecond
)

var openACL = zk.WorldACL(zk.PermAll)

// recorder keeps every event go-zookeeper reports for one connection. Watch
// events reach it straight from the wire, before the library's one-shot
// bookkeeping, so tests can count what the server actually sent.
type recorder struct {
	mu      sync.Mutex
	events  []zk.Event
	changed chan struct{}
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{})}
}

func (r *recorder) add(ev zk.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// waitFor returns the first event at index >= from that matches, and its index.
func (r *recorder) waitFor(from int, timeout time.Duration, match func(zk.Event) bool) (zk.Event, int, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i := from; i < len(r.events); i++ {
			if match(r.events[i]) {
				ev := r.events[i]
				r.mu.Unlock()
				return ev, i, true
			}
		}
		from = len(r.events)
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return zk.Event{}, -1, false
		}
	}
}

func (r *recorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, ev := range r.events {
		fmt.Fprintf(&b, "  #%d type=%v state=%v path=%q err=%v\n", i, ev.Type, ev.State, ev.Path, ev.Err)
	}
	return b.String()
}

// testLogger forwards go-zookeeper's log lines to the test until it ends;
// the library's goroutines may still log after Close.
type testLogger struct {
	mu   sync.Mutex
	t    testing.TB
	name string
	done bool
}

func (l *testLogger) Printf(format string, args ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf("[zk %s] "+format, append([]interface{}{l.name}, args...)...)
	}
}

// client is one go-zookeeper connection (one session) plus its event log.
type client struct {
	*zk.Conn
	t    testing.TB
	name string
	rec  *recorder
}

// connect opens a session to addr and waits until it is established.
func connect(t testing.TB, name, addr string, timeout time.Duration) *client {
	t.Helper()
	logger := &testLogger{t: t, name: name}
	t.Cleanup(func() {
		logger.mu.Lock()
		logger.done = true
		logger.mu.Unlock()
	})
	rec := newRecorder()
	conn, _, err := zk.Connect([]string{addr}, timeout,
		zk.WithLogger(logger), zk.WithLogInfo(false), zk.WithEventCallback(rec.add))
	if err != nil {
		t.Fatalf("%s: connect %s: %v", name, addr, err)
	}
	c := &client{Conn: conn, t: t, name: name, rec: rec}
	t.Cleanup(func() {
		conn.Close()
		if t.Failed() {
			t.Logf("events seen by %s:\n%s", name, rec.dump())
		}
	})
	c.waitState(0, zk.StateHasSession, connectTimeout)
	return c
}

// dial connects to the server under test with the default session timeout.
func dial(t testing.TB, name string) *client {
	t.Helper()
	return connect(t, name, serverAddr, sessionTimeout)
}

// waitState waits for a session state change recorded at index >= from.
func (c *client) waitState(from int, want zk.State, timeout time.Duration) int {
	c.t.Helper()
	_, i, ok := c.rec.waitFor(from, timeout, func(ev zk.Event) bool {
		return ev.Type == zk.EventSession && ev.State == want
	})
	if !ok {
		c.t.Fatalf("%s: no session state %v within %v; events:\n%s", c.name, want, timeout, c.rec.dump())
	}
	return i
}

// barrier returns once the server has answered a sync sent after every
// earlier request; watch events caused by completed writes arrive before it.
func (c *client) barrier(path string) {
	c.t.Helper()
	if _, err := c.Sync(path); err != nil {
		c.t.Fatalf("%s: sync %s: %v", c.name, path, err)
	}
}

// watchEvents counts the watch events for path (not session events)
// recorded at index >= from.
func (c *client) watchEvents(from int, path string) []zk.Event {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	var out []zk.Event
	for _, ev := range c.rec.events[min(from, len(c.rec.events)):] {
		if ev.Type != zk.EventSession && ev.Type != zk.EventNotWatching && ev.Path == path {
			out = append(out, ev)
		}
	}
	return out
}

// expectWatch waits for one event on a watch channel and checks it.
func expectWatch(t testing.TB, ch <-chan zk.Event, wantType zk.EventType, wantPath string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("watch channel for %s closed without an event", wantPath)
		}
		if ev.Err != nil {
			t.Fatalf("watch on %s: error event %v (type %v)", wantPath, ev.Err, ev.Type)
		}
		if ev.Type != wantType || ev.Path != wantPath {
			t.Fatalf("watch event = {%v %q}, want {%v %q}", ev.Type, ev.Path, wantType, wantPath)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("no %v event for %s within %v", wantType, wantPath, eventTimeout)
	}
}

// expectNoWatch checks that a watch channel stays silent.
func expectNoWatch(t testing.TB, ch <-chan zk.Event, what string) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("%s: unexpected watch event {%v %q err=%v}", what, ev.Type, ev.Path, ev.Err)
	case <-time.After(quietPeriod):
	}
}

// testRoot creates a fresh persistent znode for one test and removes its
// subtree afterwards, so tests never share state even on a reused server.
func testRoot(t testing.TB, c *client) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	root := fmt.Sprintf("/gocompat-%s-%d", name, time.Now().UnixNano())
	mustCreate(t, c, root, nil, zk.FlagPersistent)
	t.Cleanup(func() {
		if err := deleteTree(c.Conn, root); err != nil {
			t.Logf("cleanup of %s: %v", root, err)
		}
	})
	return root
}

func deleteTree(c *zk.Conn, path string) error {
	children, _, err := c.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := deleteTree(c, path+"/"+child); err != nil {
			return err
		}
	}
	if err := c.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

func mustCreate(t testing.TB, c *client, path string, data []byte, flags int32) string {
	t.Helper()
	got, err := c.Create(path, data, flags, openACL)
	if err != nil {
		t.Fatalf("%s: create %s (flags %d): %v", c.name, path, flags, err)
	}
	return got
}

func mustGet(t testing.TB, c *client, path string) ([]byte, *zk.Stat) {
	t.Helper()
	data, stat, err := c.Get(path)
	if err != nil {
		t.Fatalf("%s: get %s: %v", c.name, path, err)
	}
	return data, stat
}

func mustExist(t testing.TB, c *client, path string, want bool) *zk.Stat {
	t.Helper()
	ok, stat, err := c.Exists(path)
	if err != nil {
		t.Fatalf("%s: exists %s: %v", c.name, path, err)
	}
	if ok != want {
		t.Fatalf("%s: exists(%s) = %v, want %v", c.name, path, ok, want)
	}
	return stat
}

func expectErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error = %v, want %v", what, got, want)
	}
}
