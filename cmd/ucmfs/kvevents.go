package main

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/user"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/events/vllm"
	"github.com/ucmfs/ucmfs/internal/connlimit"
	"github.com/ucmfs/ucmfs/store"
	"github.com/urfave/cli/v3"
)

// kvEventsFlags are the flags of the KV-event publisher (docs/control.md
// "KV events").
func kvEventsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "kv-events", Category: catControl,
			Usage: "publish what the tiers hold as vLLM KV events on `ENDPOINT` (tcp://*:5557 or an address of this host listens, tcp://HOST:PORT of another host connects to a router); off by default"},
		&cli.StringFlag{Name: "kv-events-replay", Category: catControl,
			Usage: "the replay `ENDPOINT` of --kv-events (default: its port + 1 when it listens; none: no replay)"},
		&cli.StringFlag{Name: "kv-events-topic", Category: catControl,
			Usage: "the `TOPIC` frame of every --kv-events message (default kv-events; llm-d's indexer reads kv@POD@MODEL)"},
		&cli.StringFlag{Name: "kv-events-models", Category: catControl,
			Usage: "the models (`LIST`, comma-separated; * for every one) whose blocks --kv-events publishes: needed with a tcp endpoint, which any peer that reaches the port reads; an ipc endpoint (mode 0600, 0660 with --control-group) publishes every model unless it is set"},
		&cli.IntFlag{Name: "events-window", Category: catControl, Value: defaultMountConfig().EventsWindow,
			Usage: "how many events (`N`) .ucm/events and --kv-events keep for readers that fall behind"},
	}
}

// applyKVEventsFlags overlays the KV-event flags the user set.
func applyKVEventsFlags(cmd *cli.Command, cfg *mountConfig) {
	if cmd.IsSet("kv-events") {
		cfg.KVEvents = cmd.String("kv-events")
	}
	if cmd.IsSet("kv-events-replay") {
		cfg.KVEventsReplay = cmd.String("kv-events-replay")
	}
	if cmd.IsSet("kv-events-topic") {
		cfg.KVEventsTopic = cmd.String("kv-events-topic")
	}
	if cmd.IsSet("kv-events-models") {
		cfg.KVEventsModels = cmd.String("kv-events-models")
	}
	if cmd.IsSet("events-window") {
		cfg.EventsWindow = int(cmd.Int("events-window"))
	}
}

// checkKVEvents checks the endpoints' form and the window.
func checkKVEvents(cfg mountConfig) error {
	if cfg.EventsWindow < 1 || cfg.EventsWindow > 1<<24 {
		return fmt.Errorf("events window %d: want 1 to %d", cfg.EventsWindow, 1<<24)
	}
	if cfg.KVEvents == "" {
		if cfg.KVEventsReplay != "" || cfg.KVEventsTopic != "" || cfg.KVEventsModels != "" {
			return fmt.Errorf("kv events replay, topic or models without kv events")
		}
		return nil
	}
	if err := vllm.CheckEndpoint(cfg.KVEvents); err != nil {
		return err
	}
	tcp := strings.HasPrefix(cfg.KVEvents, "tcp://") || strings.HasPrefix(cfg.KVEventsReplay, "tcp://")
	if tcp && strings.TrimSpace(cfg.KVEventsModels) == "" {
		return fmt.Errorf("kv events on %s: a tcp endpoint is open to every peer that reaches it: name the models it may publish with --kv-events-models (* for every one), or use an ipc:// endpoint", cfg.KVEvents)
	}
	if r := cfg.KVEventsReplay; r != "" && r != "none" {
		return vllm.CheckEndpoint(r)
	}
	return nil
}

// startKVEvents starts the publisher of --kv-events (nil when off); its
// listeners draw on budget.
func startKVEvents(cfg mountConfig, core *store.Store, log *slog.Logger, stderr io.Writer, budget *connlimit.Budget) (*vllm.Publisher, error) {
	if cfg.KVEvents == "" {
		return nil, nil
	}
	vc := vllm.Config{Endpoint: cfg.KVEvents, Replay: cfg.KVEventsReplay, Topic: cfg.KVEventsTopic, Logger: log,
		Budget: budget, IPCMode: 0o600, Routable: routable(cfg.KVEventsModels)}
	if cfg.ControlGroup != "" {
		gid, err := groupID(cfg.ControlGroup)
		if err != nil {
			return nil, err
		}
		vc.IPCMode, vc.IPCGroup = 0o660, gid
	}
	p, err := vllm.Start(vc, core)
	if err != nil {
		return nil, err
	}
	announce(cfg, log, stderr, "KV events on %s (listening on %s), replay on %s (listening on %s), topic %s, models %s",
		cfg.KVEvents, addrString(p.Addr()), cmp.Or(p.ReplayEndpoint(), "none"), addrString(p.ReplayAddr()),
		p.Topic(), cmp.Or(cfg.KVEventsModels, "*"))
	return p, nil
}

// routable is the filter of --kv-events-models: nil (every model) for
// "" or "*", else the models listed.
func routable(list string) func(string) bool {
	names := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names[n] = true
		}
	}
	if len(names) == 0 || names["*"] {
		return nil
	}
	return func(model string) bool { return names[model] }
}

// groupID is a group's id, given its name or id.
func groupID(g string) (int, error) {
	if n, err := strconv.ParseUint(g, 10, 31); err == nil {
		return int(n), nil
	}
	grp, err := user.LookupGroup(g)
	if err != nil {
		return 0, fmt.Errorf("control group %q: %w", g, err)
	}
	return strconv.Atoi(grp.Gid)
}

// addrString is a's string ("-" for none: a socket that connects).
func addrString(a net.Addr) string {
	if a == nil {
		return "-"
	}
	return a.String()
}
