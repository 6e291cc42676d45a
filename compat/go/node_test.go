package compat

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestCreateGetSetStat(t *testing.T) {
	c := dial(t, "crud")
	root := testRoot(t, c)
	node := root + "/n"

	if got := mustCreate(t, c, node, []byte("hello"), zk.FlagPersistent); got != node {
		t.Fatalf("create returned %q, want %q", got, node)
	}
	data, stat := mustGet(t, c, node)
	if string(data) != "hello" {
		t.Errorf("data = %q, want hello", data)
	}
	if stat.Version != 0 || stat.Cversion != 0 || stat.Aversion != 0 || stat.NumChildren != 0 ||
		stat.DataLength != 5 || stat.EphemeralOwner != 0 {
		t.Errorf("fresh stat = %+v", stat)
	}
	if stat.Czxid == 0 || stat.Czxid != stat.Mzxid || stat.Pzxid != stat.Czxid {
		t.Errorf("fresh stat zxids czxid=%#x mzxid=%#x pzxid=%#x, want all equal and non-zero", stat.Czxid, stat.Mzxid, stat.Pzxid)
	}
	if stat.Ctime == 0 || stat.Ctime != stat.Mtime {
		t.Errorf("fresh stat ctime=%d mtime=%d, want equal and non-zero", stat.Ctime, stat.Mtime)
	}

	setStat, err := c.Set(node, []byte("hi"), 0)
	if err != nil {
		t.Fatalf("set: %v", err)
	}
	if setStat.Version != 1 || setStat.DataLength != 2 || setStat.Mzxid <= stat.Mzxid || setStat.Czxid != stat.Czxid {
		t.Errorf("stat after set = %+v (before %+v)", setStat, stat)
	}
	_, again := mustGet(t, c, node)
	if *again != *setStat {
		t.Errorf("get stat %+v differs from set's stat %+v", again, setStat)
	}

	// Creating a child moves the parent's cversion, numChildren and pzxid
	// but not its version or mzxid.
	mustCreate(t, c, node+"/child", nil, zk.FlagPersistent)
	_, parent := mustGet(t, c, node)
	if parent.Cversion != 1 || parent.NumChildren != 1 || parent.Version != 1 ||
		parent.Mzxid != setStat.Mzxid || parent.Pzxid <= setStat.Mzxid {
		t.Errorf("parent stat after child create = %+v", parent)
	}
	children, cstat, err := c.Children(node)
	if err != nil || !slices.Equal(children, []string{"child"}) {
		t.Errorf("children = (%v, %v), want [child]", children, err)
	}
	if cstat == nil || *cstat != *parent {
		t.Errorf("getChildren2 stat = %+v, want %+v", cstat, parent)
	}

	// Empty data and data with every byte value round-trip.
	empty := mustCreate(t, c, root+"/empty", nil, zk.FlagPersistent)
	if data, st := mustGet(t, c, empty); len(data) != 0 || st.DataLength != 0 {
		t.Errorf("empty node: data %q dataLength %d", data, st.DataLength)
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	if _, err := c.Set(empty, all, -1); err != nil {
		t.Fatalf("set binary: %v", err)
	}
	if data, _ := mustGet(t, c, empty); !bytes.Equal(data, all) {
		t.Errorf("binary data did not round-trip")
	}
}

func TestLargeData(t *testing.T) {
	c := dial(t, "large")
	root := testRoot(t, c)
	// Well under the 1 MiB default jute.maxbuffer, big enough to span many
	// TCP segments.
	payload := bytes.Repeat([]byte("0123456789abcdef"), 512*1024/16)
	node := mustCreate(t, c, root+"/big", payload, zk.FlagPersistent)
	data, stat := mustGet(t, c, node)
	if !bytes.Equal(data, payload) || int(stat.DataLength) != len(payload) {
		t.Fatalf("512 KiB payload came back as %d bytes (dataLength %d)", len(data), stat.DataLength)
	}
}

func TestSequentialNames(t *testing.T) {
	c := dial(t, "seq")
	root := testRoot(t, c)

	for i := 0; i < 3; i++ {
		want := fmt.Sprintf("%s/job-%010d", root, i)
		if got := mustCreate(t, c, root+"/job-", nil, zk.FlagSequence); got != want {
			t.Fatalf("sequential create %d = %q, want %q", i, got, want)
		}
	}
	// The suffix counts the creates under the parent, deletes excluded.
	// ZooKeeper keeps that count internally and reports
	// cversion = 2*creates - numChildren, i.e. creates plus deletes.
	if err := c.Delete(fmt.Sprintf("%s/job-%010d", root, 2), -1); err != nil {
		t.Fatalf("delete: %v", err)
	}
	mustCreate(t, c, root+"/plain", nil, zk.FlagPersistent)
	_, parent := mustGet(t, c, root)
	if parent.Cversion != 5 || parent.NumChildren != 3 {
		t.Errorf("parent after 4 creates and 1 delete: cversion %d numChildren %d, want 5 and 3",
			parent.Cversion, parent.NumChildren)
	}
	want := fmt.Sprintf("%s/lock-%010d", root, 4)
	if got := mustCreate(t, c, root+"/lock-", nil, zk.FlagEphemeralSequential); got != want {
		t.Fatalf("ephemeral sequential after 4 creates and 1 delete = %q, want %q", got, want)
	}
	// A bare trailing slash names the node by the counter alone.
	dir := mustCreate(t, c, root+"/dir", nil, zk.FlagPersistent)
	if got := mustCreate(t, c, dir+"/", nil, zk.FlagSequence); got != dir+"/0000000000" {
		t.Errorf("sequential child with empty prefix = %q, want %s/0000000000", got, dir)
	}
}

func TestErrorCodes(t *testing.T) {
	c := dial(t, "errors")
	root := testRoot(t, c)
	node := root + "/n"
	missing := root + "/missing"
	mustCreate(t, c, node, []byte("x"), zk.FlagPersistent)
	mustCreate(t, c, node+"/child", nil, zk.FlagPersistent)

	_, err := c.Create(node, nil, zk.FlagPersistent, openACL)
	expectErr(t, "create existing", err, zk.ErrNodeExists)
	_, err = c.Create(missing+"/child", nil, zk.FlagPersistent, openACL)
	expectErr(t, "create under missing parent", err, zk.ErrNoNode)
	_, _, err = c.Get(missing)
	expectErr(t, "get missing", err, zk.ErrNoNode)
	_, _, err = c.Children(missing)
	expectErr(t, "children of missing", err, zk.ErrNoNode)
	_, err = c.Set(missing, nil, -1)
	expectErr(t, "set missing", err, zk.ErrNoNode)
	err = c.Delete(missing, -1)
	expectErr(t, "delete missing", err, zk.ErrNoNode)
	if ok, _, err := c.Exists(missing); ok || err != nil {
		t.Errorf("exists missing = (%v, %v), want (false, nil)", ok, err)
	}

	_, err = c.Set(node, []byte("y"), 5)
	expectErr(t, "set with wrong version", err, zk.ErrBadVersion)
	err = c.Delete(node+"/child", 3)
	expectErr(t, "delete with wrong version", err, zk.ErrBadVersion)
	if data, st := mustGet(t, c, node); string(data) != "x" || st.Version != 0 {
		t.Errorf("node changed by failed writes: %q version %d", data, st.Version)
	}

	err = c.Delete(node, -1)
	expectErr(t, "delete with children", err, zk.ErrNotEmpty)
	err = c.Delete(node+"/child", 0)
	if err != nil {
		t.Fatalf("delete with the right version: %v", err)
	}
	if err := c.Delete(node, 0); err != nil {
		t.Fatalf("delete of the now empty node: %v", err)
	}

	eph := mustCreate(t, c, root+"/eph", nil, zk.FlagEphemeral)
	_, err = c.Create(eph+"/child", nil, zk.FlagPersistent, openACL)
	expectErr(t, "child of an ephemeral", err, zk.ErrNoChildrenForEphemerals)
}

func TestSystemZnodes(t *testing.T) {
	c := dial(t, "system")
	children, _, err := c.Children("/")
	if err != nil {
		t.Fatalf("children of /: %v", err)
	}
	if !slices.Contains(children, "zookeeper") {
		t.Errorf("children of / = %v, want it to contain zookeeper", children)
	}
	mustExist(t, c, "/zookeeper/quota", true)
	acl, _, err := c.GetACL("/")
	if err != nil {
		t.Fatalf("getACL /: %v", err)
	}
	if len(acl) != 1 || acl[0].Scheme != "world" || acl[0].ID != "anyone" || acl[0].Perms != zk.PermAll {
		t.Errorf("ACL of / = %+v, want world:anyone with all permissions", acl)
	}
}

func TestLockRecipe(t *testing.T) {
	a := dial(t, "lock-a")
	b := dial(t, "lock-b")
	root := testRoot(t, a)
	path := root + "/lock"

	la := zk.NewLock(a.Conn, path, openACL)
	lb := zk.NewLock(b.Conn, path, openACL)
	if err := la.Lock(); err != nil {
		t.Fatalf("a lock: %v", err)
	}
	acquired := make(chan error, 1)
	go func() { acquired <- lb.Lock() }()
	select {
	case err := <-acquired:
		t.Fatalf("b acquired a held lock (err %v)", err)
	case <-time.After(quietPeriod):
	}
	if err := la.Unlock(); err != nil {
		t.Fatalf("a unlock: %v", err)
	}
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatalf("b lock: %v", err)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("b did not get the lock within %v of its release", eventTimeout)
	}
	children, _, err := a.Children(path)
	if err != nil || len(children) != 1 || !strings.Contains(children[0], "lock-") {
		t.Fatalf("lock children = (%v, %v), want one lock- node", children, err)
	}
	if err := lb.Unlock(); err != nil {
		t.Fatalf("b unlock: %v", err)
	}
}

func TestFourLetterWords(t *testing.T) {
	reply, err := fourLetterWord(serverAddr, "ruok")
	if err != nil || reply != "imok" {
		t.Fatalf("ruok = (%q, %v), want imok", reply, err)
	}
	// go-zookeeper's own helper reads the same reply.
	if oks := zk.FLWRuok([]string{serverAddr}, ioTimeout); len(oks) != 1 || !oks[0] {
		t.Errorf("zk.FLWRuok = %v, want [true]", oks)
	}
	srvr, err := fourLetterWord(serverAddr, "srvr")
	if err != nil {
		t.Fatalf("srvr: %v", err)
	}
	for _, want := range []string{"Zookeeper version: ", "Latency min/avg/max: ", "Received: ",
		"Sent: ", "Connections: ", "Outstanding: ", "Zxid: 0x", "Mode: standalone", "Node count: "} {
		if !strings.Contains(srvr, want) {
			t.Errorf("srvr output lacks %q:\n%s", want, srvr)
		}
	}

	// cons lists our session with its id and negotiated timeout in the
	// layout that zk.FLWCons parses.
	c := dial(t, "cons")
	clients, _ := zk.FLWCons([]string{serverAddr}, ioTimeout)
	if len(clients) != 1 {
		t.Fatalf("zk.FLWCons returned %d servers", len(clients))
	}
	found := false
	for _, cl := range clients[0].Clients {
		if cl.SessionID == c.SessionID() {
			found = true
			if cl.Timeout != int32(sessionTimeout.Milliseconds()) {
				t.Errorf("cons timeout for our session = %d, want %d", cl.Timeout, sessionTimeout.Milliseconds())
			}
		}
	}
	if !found {
		raw, _ := fourLetterWord(serverAddr, "cons")
		t.Errorf("cons does not list session %#x in a parseable line:\n%s", c.SessionID(), raw)
	}
}

// Many requests in flight on one session: replies must match their xids
// and sequential names must stay unique.
func TestPipelinedRequests(t *testing.T) {
	c := dial(t, "pipeline")
	root := testRoot(t, c)
	const n = 100
	names := make(chan string, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, err := c.Create(root+"/item-", []byte("x"), zk.FlagSequence, openACL)
			if err != nil {
				errs <- err
				return
			}
			if _, _, err := c.Get(name); err != nil {
				errs <- err
				return
			}
			names <- name
		}()
	}
	wg.Wait()
	close(names)
	close(errs)
	for err := range errs {
		t.Fatalf("pipelined request failed: %v", err)
	}
	seen := make(map[string]bool)
	for name := range names {
		seen[name] = true
	}
	for i := 0; i < n; i++ {
		if name := fmt.Sprintf("%s/item-%010d", root, i); !seen[name] {
			t.Errorf("missing %s among %d names", name, len(seen))
		}
	}
	_, stat := mustGet(t, c, root)
	if stat.NumChildren != n || stat.Cversion != n {
		t.Errorf("parent numChildren %d cversion %d, want %d and %d", stat.NumChildren, stat.Cversion, n, n)
	}
}
