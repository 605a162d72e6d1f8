package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// exportCmd writes the journal of a date range in an accountant's tool's
// import format, the same file GET /v1/export/{format} answers.
type exportCmd struct {
	Format string `arg:"" enum:"beancount,hledger,xero,quickbooks" help:"beancount, hledger, xero or quickbooks."`
	From   string `name:"from" required:"" help:"First day, YYYY-MM-DD in ONCELEDGER_REPORTING_TZ."`
	To     string `name:"to" required:"" help:"The day after the last, YYYY-MM-DD (exclusive, as /v1/journal)."`
	Out    string `name:"out" help:"Write to this file (default: standard output); written whole or not at all."`
}

func (c *exportCmd) Run(g *globals) error {
	zone, err := g.cli.zone()
	if err != nil {
		return err
	}
	f, err := bookexport.ParseFormat(c.Format)
	if err != nil {
		return err
	}
	from, err := time.ParseInLocation(time.DateOnly, c.From, zone)
	if err != nil {
		return fmt.Errorf("%w: --from: want a date like 2026-11-01, got %q", bookexport.ErrBadRange, c.From)
	}
	to, err := time.ParseInLocation(time.DateOnly, c.To, zone)
	if err != nil {
		return fmt.Errorf("%w: --to: want a date like 2026-12-01, got %q", bookexport.ErrBadRange, c.To)
	}
	table, err := exportTable(g)
	if err != nil {
		return err
	}
	pool, err := openPool(g.ctx, g.cli.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	x := app.NewExporter(readmodel.New(pool), table, zone)
	req := bookexport.Request{Format: f, From: from, To: to}
	if c.Out == "" {
		return x.Export(g.ctx, req, os.Stdout)
	}
	return writeWhole(c.Out, func(w io.Writer) error { return x.Export(g.ctx, req, w) })
}

// exportTable reads the account table ONCELEDGER_EXPORT_ACCOUNTS names
// (serve and export).
func exportTable(g *globals) (*bookexport.Table, error) {
	return bookexport.LoadTable(g.cli.ExportAccounts)
}

// writeWhole writes path through a temporary file in its directory,
// renamed into place only when write succeeded: a failed export leaves no
// truncated file an accountant could import.
func writeWhole(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
