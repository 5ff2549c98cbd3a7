// mlpeer: one hashicorp/memberlist member as a process, for comparing vigil
// with memberlist on the same machine, scenarios and wire.
//
// It prints one JSON object a line on stdout, in the shape `vigil agent`
// prints: {"ts_ms", "node", "event", "member"}. Events: "up" (NotifyJoin),
// "dead" (NotifyLeave: memberlist does not tell a death from a leave; the
// comparison has no graceful leaves), and, parsed from memberlist's log,
// "suspected" with "by" = this node when its own probe failed (an
// accusation), like vigil's suspected events whose accuser is the node.
//
// Flags: -name, -addr (default 127.0.0.1), -port, -join host:port[,...], -key
// (64 hex digits: AES-256-GCM on every packet, as vigil seals every packet).
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"
)

var (
	out   = json.NewEncoder(os.Stdout)
	outMu sync.Mutex
	name  string
)

func emit(event, member string, extra map[string]interface{}) {
	v := map[string]interface{}{
		"ts_ms": time.Now().UnixNano() / int64(time.Millisecond), "node": name, "event": event, "member": member,
	}
	for k, x := range extra {
		v[k] = x
	}
	outMu.Lock()
	defer outMu.Unlock()
	_ = out.Encode(v)
}

type events struct{}

func (events) NotifyJoin(n *memberlist.Node)   { emit("up", n.Name, nil) }
func (events) NotifyLeave(n *memberlist.Node)  { emit("dead", n.Name, nil) }
func (events) NotifyUpdate(n *memberlist.Node) {}

var suspectLine = regexp.MustCompile(`memberlist: Suspect (\S+) has failed`)

// logs turns memberlist's log lines into events, and passes them to stderr.
func logs(r io.Reader) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if m := suspectLine.FindStringSubmatch(line); m != nil {
			emit("suspected", m[1], map[string]interface{}{"by": name})
		}
		fmt.Fprintln(os.Stderr, line)
	}
}

func main() {
	flag.StringVar(&name, "name", "", "member name")
	addr := flag.String("addr", "127.0.0.1", "IP address to bind and advertise")
	port := flag.Int("port", 7946, "port")
	join := flag.String("join", "", "members to join through, host:port[,...]")
	key := flag.String("key", "", "64 hex digits: AES-256-GCM")
	flag.Parse()
	if name == "" {
		fmt.Fprintln(os.Stderr, "mlpeer: -name is required")
		os.Exit(2)
	}
	c := memberlist.DefaultLANConfig()
	c.Name = name
	c.BindAddr = *addr
	c.AdvertiseAddr = *addr
	c.BindPort = *port
	c.AdvertisePort = *port
	c.Events = events{}
	r, w := io.Pipe()
	go logs(r)
	c.Logger = log.New(w, "", log.LstdFlags)
	if *key != "" {
		k, err := hex.DecodeString(*key)
		if err != nil || len(k) != 32 {
			fmt.Fprintln(os.Stderr, "mlpeer: -key: 64 hex digits")
			os.Exit(2)
		}
		c.SecretKey = k
	}
	m, err := memberlist.Create(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mlpeer:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "mlpeer: %s on %s:%d\n", name, *addr, *port)
	if *join != "" {
		if _, err := m.Join(strings.Split(*join, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "mlpeer: join:", err)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	_ = m.Leave(2 * time.Second)
	_ = m.Shutdown()
}
