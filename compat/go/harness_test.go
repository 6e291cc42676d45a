// Package compat checks meerkat against go-zookeeper, a client written
// independently of meerkat and of Apache ZooKeeper's Java client.
//
// TestMain starts `$MEERKAT_BIN server zoo.cfg` on a free loopback port and
// stops it (by pid) after the tests. With ZK_ADDR=host:port the tests run
// against an already running server instead, e.g. Apache ZooKeeper, to check
// that the tests themselves encode real ZooKeeper behaviour.
package compat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every wait in these tests is bounded by one of these.
const (
	serverReadyTimeout = 30 * time.Second
	serverStopTimeout  = 10 * time.Second
	ioTimeout          = 2 * time.Second
	tickTimeMs         = 200
	logTailLines       = 60
)

// serverAddr is the host:port every test talks to.
var serverAddr string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if addr := os.Getenv("ZK_ADDR"); addr != "" {
		serverAddr = addr
		fmt.Fprintf(os.Stderr, "compat: testing the server already running at %s (ZK_ADDR)\n", addr)
		return m.Run()
	}
	bin := os.Getenv("MEERKAT_BIN")
	if bin == "" {
		fmt.Fprintln(os.Stderr, "FAIL: MEERKAT_BIN is not set. Set it to the meerkat binary "+
			"(cargo build -p meerkat, then target/debug/meerkat), or set ZK_ADDR=host:port "+
			"to test a server that is already running.")
		return 1
	}
	srv, err := startServer(bin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: could not start %s: %v\n", bin, err)
		if srv != nil {
			srv.dumpLog()
			srv.stop()
			fmt.Fprintf(os.Stderr, "compat: server files kept in %s\n", srv.dir)
		}
		return 1
	}
	serverAddr = srv.addr
	code := m.Run()
	if srv.exitedEarly() {
		fmt.Fprintln(os.Stderr, "FAIL: the server process exited before the tests ended")
		code = 1
	}
	if code != 0 {
		srv.dumpLog()
	}
	if err := srv.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "compat: stopping the server: %v\n", err)
	}
	if code == 0 {
		os.RemoveAll(srv.dir)
	} else {
		fmt.Fprintf(os.Stderr, "compat: server files kept in %s\n", srv.dir)
	}
	return code
}

// server is a meerkat process started by TestMain.
type server struct {
	cmd     *exec.Cmd
	dir     string
	addr    string
	logPath string
	done    chan struct{} // closed when the process has exited
}

func startServer(bin string) (*server, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("MEERKAT_BIN: %w", err)
	}
	dir, err := os.MkdirTemp("", "meerkat-compat-go-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`tickTime=%d
clientPort=%d
clientPortAddress=127.0.0.1
dataDir=%s
minSessionTimeout=%d
maxSessionTimeout=%d
extendedTypesEnabled=true
4lw.commands.whitelist=*
# meerkat reads ZooKeeper's container-manager system property from zoo.cfg; a short
# interval keeps the container and TTL tests quick.
znode.container.checkIntervalMs=500
`, tickTimeMs, port, dataDir, 2*tickTimeMs, 30*tickTimeMs)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	cmd := exec.Command(bin, "server", cfgPath)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{
		cmd:     cmd,
		dir:     dir,
		addr:    fmt.Sprintf("127.0.0.1:%d", port),
		logPath: logPath,
		done:    make(chan struct{}),
	}
	go func() {
		cmd.Wait() // the exit status stays in cmd.ProcessState
		close(s.done)
	}()
	fmt.Fprintf(os.Stderr, "compat: started %s (pid %d) on %s\n", bin, cmd.Process.Pid, s.addr)
	if err := s.waitReady(); err != nil {
		return s, err
	}
	return s, nil
}

// freePort finds an unused loopback port below the kernel's ephemeral range.
// A port from Listen(":0") is an ephemeral one, which any outgoing connection
// may be given between our release and the server's bind; the Rust tests and
// the Java suite follow the same rule (crates/ports).
func freePort() (int, error) {
	const portMin = 10000
	top := ephemeralStart()
	if top-portMin < 1000 {
		return 0, fmt.Errorf("the ephemeral range starts at %d: too few ports below it", top)
	}
	start := int(time.Now().UnixNano() % int64(top-portMin))
	for i := 0; i < top-portMin; i++ {
		port := portMin + (start+i)%(top-portMin)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port between %d and %d", portMin, top)
}

// ephemeralStart is the first port of net.ipv4.ip_local_port_range, or Linux's
// default when it cannot be read.
func ephemeralStart() int {
	text, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(string(text), &low, &high); err != nil || low > high {
		return 32768
	}
	return low
}

// waitReady polls until the server answers ruok with imok or, for a
// server without four-letter words, accepts a session.
func (s *server) waitReady() error {
	deadline := time.Now().Add(serverReadyTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("server exited during start-up (%v)", s.cmd.ProcessState)
		default:
		}
		reply, err := fourLetterWord(s.addr, "ruok")
		if err == nil && reply == "imok" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("ruok answered %q", reply)
		}
		if herr := probeSession(s.addr); herr == nil {
			return nil
		} else {
			lastErr = fmt.Errorf("%v; session handshake: %v", err, herr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %v", serverReadyTimeout, lastErr)
}

// stop ends the process by its pid: SIGTERM, then SIGKILL if it lingers.
func (s *server) stop() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(serverStopTimeout):
	}
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	<-s.done
	return errors.New("server ignored SIGTERM and was killed")
}

func (s *server) exitedEarly() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) dumpLog() {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return
	}
	text := strings.TrimRight(string(data), "\n")
	if text == "" {
		fmt.Fprintln(os.Stderr, "(the server log is empty)")
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	fmt.Fprintf(os.Stderr, "--- last %d lines of the server log ---\n%s\n---\n",
		len(lines), strings.Join(lines, "\n"))
}

// fourLetterWord sends a 4lw command and returns the whole reply; the server
// closes the connection after answering.
func fourLetterWord(addr, cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(conn)
	return string(reply), err
}

// probeSession performs a bare ConnectRequest handshake and closes the
// session again; it needs nothing from the server but the client protocol.
func probeSession(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(ioTimeout))

	var req bytes.Buffer
	binary.Write(&req, binary.BigEndian, int32(0))    // protocolVersion
	binary.Write(&req, binary.BigEndian, int64(0))    // lastZxidSeen
	binary.Write(&req, binary.BigEndian, int32(4000)) // timeOut
	binary.Write(&req, binary.BigEndian, int64(0))    // sessionId
	binary.Write(&req, binary.BigEndian, int32(16))   // passwd length
	req.Write(make([]byte, 16))
	req.WriteByte(0) // readOnly
	if err := writeFrame(conn, req.Bytes()); err != nil {
		return err
	}
	reply, err := readFrame(conn)
	if err != nil {
		return err
	}
	if len(reply) < 16 {
		return fmt.Errorf("short ConnectResponse (%d bytes)", len(reply))
	}
	if binary.BigEndian.Uint64(reply[8:16]) == 0 {
		return errors.New("ConnectResponse has session id 0")
	}
	// closeSession (xid 1, opcode -11) so the probe leaves nothing behind.
	var closeReq bytes.Buffer
	binary.Write(&closeReq, binary.BigEndian, int32(1))
	binary.Write(&closeReq, binary.BigEndian, int32(-11))
	if err := writeFrame(conn, closeReq.Bytes()); err != nil {
		return nil
	}
	readFrame(conn)
	return nil
}

func writeFrame(w io.Writer, payload []byte) error {
	frame := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(frame, uint32(len(payload)))
	copy(frame[4:], payload)
	_, err := w.Write(frame)
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame length %d too large", size)
	}
	buf := make([]byte, size)
	_, err := io.ReadFull(r, buf)
	return buf, err
}
