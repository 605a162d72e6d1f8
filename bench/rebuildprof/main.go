// Command rebuildprof runs the same rebuild as `onceledger rebuild --all`
// under a CPU profile, so bench/run.sh can show where a rebuild's Go time
// goes (the onceledger binary has no profiling flag for one-shot commands).
//
//	go run ./bench/rebuildprof --database-url postgres://... --cpuprofile rebuild.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

func main() {
	url := flag.String("database-url", os.Getenv("ONCELEDGER_DATABASE_URL"), "database")
	out := flag.String("cpuprofile", "rebuild.pprof", "CPU profile file")
	batch := flag.Int("batch-size", 0, "events per bulk batch (0: the default)")
	swapAll := flag.Bool("swap-all", false, "replace every table (as rebuild --swap-all)")
	flag.Float64Var(&rawRate, "raw-rate", 0, "the raw read of the events table, events/s (0: unknown): each stage's ratio to it")
	flag.Parse()
	if err := run(*url, *out, *batch, *swapAll); err != nil {
		fmt.Fprintln(os.Stderr, "rebuildprof:", err)
		os.Exit(1)
	}
}

// rawRate is the --raw-rate flag.
var rawRate float64

// stage prints one phase or busy stage: its time and, over the events
// replayed, its events/s and the ratio of that to the raw read.
func stage(name string, d time.Duration, events int64) {
	if d < 50*time.Millisecond {
		fmt.Printf("  %-26s %10s\n", name, d.Round(time.Millisecond))
		return
	}
	rate := float64(events) / max(d.Seconds(), 1e-9)
	ratio := ""
	if rawRate > 0 {
		ratio = fmt.Sprintf(" (%.2f of the raw read)", rate/rawRate)
	}
	fmt.Printf("  %-26s %10s %12.0f events/s%s\n", name, d.Round(time.Millisecond), rate, ratio)
}

func run(url, out string, batch int, swapAll bool) error {
	ctx := context.Background()
	// As `onceledger rebuild` (rebuildMemory).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(300)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(160 << 20)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.MaxConns = max(cfg.MaxConns, 8) // as `onceledger rebuild` (rebuildConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// As `onceledger rebuild`: the read model writes through its own marked
	// pool, which the feed horizon passes.
	rmPool, err := postgres.NewReadModelPool(ctx, pool)
	if err != nil {
		return err
	}
	defer rmPool.Close()
	svc := projections.NewService(postgres.NewEventStore(pool), readmodel.New(rmPool), log)
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	// The last progress call marks the end of the replay; what follows is
	// indexes, catch-up, comparison and swap.
	start := time.Now()
	var replayed time.Duration
	rep, err := svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: batch, SwapAll: swapAll,
		Progress: func(int64, int64) { replayed = time.Since(start) }})
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	fmt.Printf("rebuilt %d events in %s (%.0f events/s; replay %s, %.0f events/s), %d differences, swapped %v\n",
		rep.Events, rep.Duration.Round(time.Millisecond), float64(rep.Events)/rep.Duration.Seconds(),
		replayed.Round(time.Millisecond), float64(rep.Events)/replayed.Seconds(), len(rep.Differences), rep.Swapped)
	stage("whole rebuild", rep.Duration, rep.Events)
	for _, p := range rep.Phases {
		stage(p.Name, p.Duration, rep.Events)
	}
	// Busy: how long each stage of the replay pipeline worked (read,
	// decode, and the lanes' fold and COPY).
	for _, p := range rep.Busy {
		stage("busy "+p.Name, p.Duration, rep.Events)
	}
	for _, t := range rep.Tables {
		fmt.Printf("  %-20s live %d rebuilt %d differing %d: %s\n", t.Table, t.LiveRows, t.RebuiltRows, t.DifferingRows, t.Repair)
	}
	return nil
}
