// Package failover kills the leader of a 3-member ensemble while go-zookeeper
// clients, one pinned to each member, write in a loop: the clients of the
// surviving members must see no Disconnected event and no failed write
// (docs/ensemble.md, "Hold, don't close"). The longest time any of them went
// without a successful write is printed, not asserted (speed is the bench's).
//
// The members are `$MEERKAT_BIN server zoo.cfg`; with ZK_SCRIPT set
// (scripts/zookeeper.sh) the same run against Apache ZooKeeper 3.9.3 is printed
// first, as the reference.
package failover

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Every wait is bounded by one of these.
const (
	members         = 3
	tickTimeMs      = 2000 // ZooKeeper's default; meerkat holds clients for one tick
	sessionTimeout  = 10 * time.Second
	servingTimeout  = 60 * time.Second
	loadBeforeKill  = 1500 * time.Millisecond
	loadAfterKill   = 3 * time.Second
	writeTimeout    = 5 * time.Second
	fourLetterLimit = 2 * time.Second
)

func TestLeaderKillUnnoticedBySurvivingMembersClients(t *testing.T) {
	if script := os.Getenv("ZK_SCRIPT"); script != "" {
		ref := run(t, func(cfg string) *exec.Cmd {
			c := exec.Command("bash", script, "run", cfg)
			c.Env = append(os.Environ(), "ZK_HEAP=256m")
			return c
		})
		t.Logf("zookeeper: %s", ref)
	}
	bin := os.Getenv("MEERKAT_BIN")
	if bin == "" {
		t.Fatal("MEERKAT_BIN is not set (scripts/compat-go.sh sets it)")
	}
	got := run(t, func(cfg string) *exec.Cmd { return exec.Command(bin, "server", cfg) })
	t.Logf("meerkat: %s", got)
	if got.disconnects != 0 || got.failures != 0 {
		t.Fatalf("clients of the surviving members noticed the leader's death: %s", got)
	}
}

// outcome is what the clients of the surviving members saw after the kill.
type outcome struct {
	disconnects int
	failures    int
	longestGap  time.Duration
}

func (o outcome) String() string {
	return fmt.Sprintf("disconnects=%d failedWrites=%d longestWriteGap=%v",
		o.disconnects, o.failures, o.longestGap.Round(time.Millisecond))
}

// member is one server process this test started.
type member struct {
	cmd        *exec.Cmd
	clientAddr string
	done       chan struct{}
}

func run(t *testing.T, command func(cfg string) *exec.Cmd) outcome {
	t.Helper()
	dir := t.TempDir()
	ms := startEnsemble(t, dir, command)
	defer func() {
		for _, m := range ms {
			m.kill()
		}
	}()
	for _, m := range ms {
		waitServing(t, m.clientAddr)
	}
	writers := make([]*writer, members)
	for i, m := range ms {
		writers[i] = startWriter(t, m.clientAddr, fmt.Sprintf("/failover-%d", i))
	}
	defer func() {
		for _, w := range writers {
			w.stop()
		}
	}()
	time.Sleep(loadBeforeKill)
	leader := -1
	for i, m := range ms {
		if strings.Contains(fourLetter(m.clientAddr, "srvr"), "Mode: leader") {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no member says it leads")
	}
	killed := time.Now()
	ms[leader].kill()
	time.Sleep(loadAfterKill)
	end := time.Now()
	var o outcome
	for i, w := range writers {
		if i == leader {
			continue
		}
		d, f, gap := w.since(killed, end)
		o.disconnects += d
		o.failures += f
		if gap > o.longestGap {
			o.longestGap = gap
		}
	}
	return o
}

func startEnsemble(t *testing.T, dir string, command func(cfg string) *exec.Cmd) []*member {
	t.Helper()
	var lines strings.Builder
	clientPorts := make([]int, members)
	for i := range clientPorts {
		clientPorts[i] = freePort(t)
		fmt.Fprintf(&lines, "server.%d=127.0.0.1:%d:%d;127.0.0.1:%d\n",
			i+1, freePort(t), freePort(t), clientPorts[i])
	}
	ms := make([]*member, members)
	for i := range ms {
		memberDir := filepath.Join(dir, fmt.Sprintf("server-%d", i+1))
		dataDir := filepath.Join(memberDir, "data")
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(memberDir, "zoo.cfg")
		text := fmt.Sprintf("tickTime=%d\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n"+
			"clientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\n%s",
			tickTimeMs, dataDir, clientPorts[i], lines.String())
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		log, err := os.Create(filepath.Join(memberDir, "server.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := command(cfg)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		log.Close()
		m := &member{cmd: cmd, clientAddr: fmt.Sprintf("127.0.0.1:%d", clientPorts[i]), done: make(chan struct{})}
		go func() { cmd.Wait(); close(m.done) }()
		ms[i] = m
	}
	return ms
}

// kill SIGKILLs the process this test started (by its pid) and reaps it.
func (m *member) kill() {
	select {
	case <-m.done:
		return
	default:
	}
	m.cmd.Process.Kill()
	<-m.done
}

func waitServing(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(servingTimeout)
	for !strings.Contains(fourLetter(addr, "srvr"), "Mode: ") {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve within %v", addr, servingTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fourLetter(addr, word string) string {
	conn, err := net.DialTimeout("tcp", addr, fourLetterLimit)
	if err != nil {
		return ""
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(fourLetterLimit))
	conn.Write([]byte(word))
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			return out.String()
		}
	}
}

// writer is a go-zookeeper client pinned to one member, setting its znode in a loop.
type writer struct {
	conn        *zk.Conn
	mu          sync.Mutex
	successes   []time.Time
	failures    []time.Time
	disconnects []time.Time
	quit        chan struct{}
	finished    chan struct{}
}

func startWriter(t *testing.T, addr, path string) *writer {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{conn: conn, quit: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		for e := range events {
			if e.Type == zk.EventSession && (e.State == zk.StateDisconnected || e.State == zk.StateExpired) {
				w.mu.Lock()
				w.disconnects = append(w.disconnects, time.Now())
				w.mu.Unlock()
			}
		}
	}()
	deadline := time.Now().Add(servingTimeout)
	for {
		_, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil || err == zk.ErrNodeExists {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create %s: %v", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	go w.loop(path)
	return w
}

func (w *writer) loop(path string) {
	defer close(w.finished)
	data := []byte(strings.Repeat("x", 100))
	for {
		select {
		case <-w.quit:
			return
		default:
		}
		done := make(chan error, 1)
		go func() { _, err := w.conn.Set(path, data, -1); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(writeTimeout):
			err = fmt.Errorf("no answer within %v", writeTimeout)
		}
		w.mu.Lock()
		if err == nil {
			w.successes = append(w.successes, time.Now())
		} else {
			w.failures = append(w.failures, time.Now())
		}
		w.mu.Unlock()
		if err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (w *writer) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	select {
	case <-w.finished:
	case <-time.After(2 * writeTimeout):
	}
	w.conn.Close()
}

// since counts what happened in [from, to] and the longest time in it without a success.
func (w *writer) since(from, to time.Time) (disconnects, failures int, longest time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := func(at time.Time) bool { return !at.Before(from) && !at.After(to) }
	for _, at := range w.disconnects {
		if in(at) {
			disconnects++
		}
	}
	for _, at := range w.failures {
		if in(at) {
			failures++
		}
	}
	previous := from
	for _, at := range w.successes {
		if !in(at) {
			continue
		}
		if gap := at.Sub(previous); gap > longest {
			longest = gap
		}
		previous = at
	}
	if gap := to.Sub(previous); gap > longest {
		longest = gap
	}
	return disconnects, failures, longest
}

// given holds the ports freePort handed out, so that no two members share one.
var given = map[int]bool{}

// freePort finds an unused loopback port below the kernel's ephemeral range
// (a port from Listen(":0") may be taken by an outgoing connection first).
func freePort(t *testing.T) int {
	t.Helper()
	const portMin = 10000
	top := 32768
	if text, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var low, high int
		if _, err := fmt.Sscan(string(text), &low, &high); err == nil && low <= high {
			top = low
		}
	}
	start := int(time.Now().UnixNano() % int64(top-portMin))
	for i := 0; i < top-portMin; i++ {
		port := portMin + (start+i)%(top-portMin)
		if given[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		given[port] = true
		return port
	}
	t.Fatal("no free loopback port")
	return 0
}
