package compat

import (
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is a loopback TCP relay that can be paused. While paused it drops
// every byte in both directions, so the server stops hearing the client's
// pings without seeing a connection close, and it refuses new connections,
// so the client cannot slip in a fresh handshake. Resuming closes the relayed
// connections, whose byte streams may have been cut mid-frame.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.paused {
			p.mu.Unlock()
			down.Close()
			continue
		}
		p.conns[down] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.relay(down)
	}
}

func (p *proxy) relay(down net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, ioTimeout)
	if err != nil {
		p.drop(down)
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(up, down) }()
	go func() { defer pumps.Done(); p.pump(down, up) }()
	pumps.Wait()
	p.drop(up)
	p.drop(down)
}

// pump copies src to dst until either side fails, discarding while paused.
func (p *proxy) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isPaused() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

func (p *proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *proxy) pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
}

func (p *proxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.paused = false
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(ioTimeout):
	}
}
