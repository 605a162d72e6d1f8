package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/onceledger/onceledger/adapters/bankfile"
	"github.com/onceledger/onceledger/adapters/bankimport"
)

// bankCmd: `onceledger bank import` (docs/reference.md).
type bankCmd struct {
	Import bankImportCmd `cmd:"" help:"Import bank statements (camt.053, camt.054, MT940, BAI2, CSV) into a bank account; a file with an error imports nothing (exit 1, naming line or XML path and field)."`
	Match  bankMatchCmd  `cmd:"" help:"Tell a bank account the payouts the ledger knows unbanked, so that lines waiting in suspense match them (an import does it first)."`
}

type bankMatchCmd struct {
	Account string `name:"account" required:"" help:"The bank account (its ledger account is bank:NAME)."`
}

func (c *bankMatchCmd) Validate() error { return bankimport.CheckAccount(c.Account) }

func (c *bankMatchCmd) Run(g *globals) error {
	a, err := openCore(g, 0)
	if err != nil {
		return err
	}
	defer a.Close()
	n, err := a.BankImporter().Match(g.ctx, c.Account)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d payouts told to the account\n", c.Account, n)
	return nil
}

type bankImportCmd struct {
	Account string   `name:"account" required:"" help:"The bank account the statements are of (its ledger account is bank:NAME)."`
	Files   []string `arg:"" type:"existingfile" help:"Statement files, as the bank delivers them."`
}

// Validate refuses an account name the ledger cannot use, before a
// database is opened.
func (c *bankImportCmd) Validate() error { return bankimport.CheckAccount(c.Account) }

func (c *bankImportCmd) Run(g *globals) error { return c.run(g, os.Stdout) }

func (c *bankImportCmd) run(g *globals, out io.Writer) error {
	a, err := openCore(g, 0)
	if err != nil {
		return err
	}
	defer a.Close()
	im := a.BankImporter()
	var total bankimport.Summary
	for _, name := range c.Files {
		name = shownPath(name)
		sum, err := im.Import(g.ctx, c.Account, func() (io.ReadCloser, error) { return os.Open(name) })
		if err != nil {
			if errors.Is(err, bankfile.ErrMalformed) {
				return fmt.Errorf("%s: nothing imported: %w", name, err)
			}
			return fmt.Errorf("%s: %w (entries recorded so far stay recorded; importing the file again completes it)", name, err)
		}
		printBankSummary(out, name, sum)
		total = bankimport.Summary{Format: "", Lines: total.Lines + sum.Lines, New: total.New + sum.New,
			Duplicates: total.Duplicates + sum.Duplicates, Conflicts: total.Conflicts + sum.Conflicts,
			Pending: total.Pending + sum.Pending, Statements: total.Statements + sum.Statements, Payouts: total.Payouts + sum.Payouts}
	}
	if len(c.Files) > 1 {
		printBankSummary(out, "total", total)
	}
	return nil
}

func printBankSummary(w io.Writer, what string, s bankimport.Summary) {
	if s.Format != "" {
		what += " (" + s.Format + ")"
	}
	fmt.Fprintf(w, "%s: %d lines read, %d new, %d duplicates, %d conflicts; %d pending (not recorded), %d statements, %d payouts told to the account\n",
		what, s.Lines, s.New, s.Duplicates, s.Conflicts, s.Pending, s.Statements, s.Payouts)
}
