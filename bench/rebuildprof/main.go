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
	flag.Parse()
	if err := run(*url, *out, *batch); err != nil {
		fmt.Fprintln(os.Stderr, "rebuildprof:", err)
		os.Exit(1)
	}
}

func run(url, out string, batch int) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
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
	svc := projections.NewService(postgres.NewEventStore(pool), readmodel.New(pool), log)
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	// The last progress call marks the end of the replay; what follows is
	// indexes, catch-up, comparison and swap.
	start := time.Now()
	var replayed time.Duration
	rep, err := svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: batch,
		Progress: func(int64, int64) { replayed = time.Since(start) }})
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	fmt.Printf("rebuilt %d events in %s (%.0f events/s; replay %s, %.0f events/s), %d differences, swapped %v\n",
		rep.Events, rep.Duration.Round(time.Millisecond), float64(rep.Events)/rep.Duration.Seconds(),
		replayed.Round(time.Millisecond), float64(rep.Events)/replayed.Seconds(), len(rep.Differences), rep.Swapped)
	return nil
}
