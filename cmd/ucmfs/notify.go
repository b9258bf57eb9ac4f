package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// The daemon speaks the sd_notify protocol when NOTIFY_SOCKET is set (a
// systemd unit with Type=notify, or the mount helper waiting for the
// mount): READY=1 once the mount answers, WATCHDOG=1 while it keeps
// answering (when the service manager asked for a watchdog), STOPPING=1
// when a clean stop begins. Without NOTIFY_SOCKET every call is a no-op.

// notifyReady says the mount is ready.
func notifyReady(log *slog.Logger) {
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		log.Warn("sd_notify READY=1", "err", err)
	}
}

// notifyStopping says a clean stop has begun.
func notifyStopping(log *slog.Logger) {
	if _, err := daemon.SdNotify(false, daemon.SdNotifyStopping); err != nil {
		log.Debug("sd_notify STOPPING=1", "err", err)
	}
}

// startWatchdog pings the service manager's watchdog at half its interval
// (WATCHDOG_USEC, for this process) as long as MNT/.ucm/stats reads: a
// daemon whose mount hangs stops pinging and gets restarted. It returns
// at once when no watchdog is asked for; stop ends the pings.
func startWatchdog(mnt string, log *slog.Logger) (stop func()) {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	stats := filepath.Join(mnt, ".ucm", "stats")
	log.Debug("watchdog on", "interval", interval)
	go func() {
		defer close(done)
		tick := time.NewTicker(interval / 2)
		defer tick.Stop()
		for {
			if _, err := os.ReadFile(stats); err != nil {
				log.Warn("watchdog: the mount does not answer; not pinging", "err", err)
			} else if _, err := daemon.SdNotify(false, daemon.SdNotifyWatchdog); err != nil {
				log.Warn("sd_notify WATCHDOG=1", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
