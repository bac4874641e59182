package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/o2i-service/o2i/projection"
)

// projectionCmd is `o2i projection rebuild [--from-beginning]`: it repairs
// Redis from PostgreSQL, or with --from-beginning reconstructs both read
// models from the event topics, while the API keeps serving.
func projectionCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "rebuild" {
		fmt.Fprint(stderr, "usage: o2i projection rebuild [--from-beginning]\n")
		return errUsage
	}
	fs := flag.NewFlagSet("projection rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fromBeginning := fs.Bool("from-beginning", false, "reconstruct the PostgreSQL read models from the events (earliest offsets), then Redis")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	d, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.close()
	var bar *progressbar.ProgressBar
	stage := ""
	progress := func(s string, done, total int64) {
		if *quiet {
			return
		}
		if s != stage || bar == nil {
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(stderr)
			}
			stage = s
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(s),
				progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond))
		}
		_ = bar.Set64(done)
	}
	start := time.Now()
	var n int64
	if *fromBeginning {
		if err := projection.New(d.pool, d.redis, cfg.KafkaBrokers, nil).RebuildFromEvents(ctx, progress); err != nil {
			return err
		}
		if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM order_view`).Scan(&n); err != nil {
			return err
		}
	} else if n, err = projection.RebuildRedis(ctx, d.pool, d.redis, progress); err != nil {
		return err
	}
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(stderr)
	}
	return json.NewEncoder(stdout).Encode(map[string]any{
		"orders": n, "fromBeginning": *fromBeginning, "seconds": time.Since(start).Seconds(),
	})
}
