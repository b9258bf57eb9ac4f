package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/ucmfs/ucmfs/events/vllm"
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
		if cfg.KVEventsReplay != "" || cfg.KVEventsTopic != "" {
			return fmt.Errorf("kv events replay or topic without kv events")
		}
		return nil
	}
	if err := vllm.CheckEndpoint(cfg.KVEvents); err != nil {
		return err
	}
	if r := cfg.KVEventsReplay; r != "" && r != "none" {
		return vllm.CheckEndpoint(r)
	}
	return nil
}

// startKVEvents starts the publisher of --kv-events (nil when off) and
// announces the addresses it listens on (port 0: the ports the kernel
// picked), as `metrics on` does.
func startKVEvents(cfg mountConfig, core *store.Store, log *slog.Logger, stderr io.Writer) (*vllm.Publisher, error) {
	if cfg.KVEvents == "" {
		return nil, nil
	}
	p, err := vllm.Start(vllm.Config{Endpoint: cfg.KVEvents, Replay: cfg.KVEventsReplay, Topic: cfg.KVEventsTopic, Logger: log}, core)
	if err != nil {
		return nil, err
	}
	replay := p.ReplayEndpoint()
	if replay == "" {
		replay = "none"
	}
	announce(cfg, log, stderr, "kv events on %s replay %s topic %s", p.Endpoint(), replay, p.Topic())
	return p, nil
}
