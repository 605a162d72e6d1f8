package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// `bank import` on a published sample statement (docs/samples/bank): every
// booked entry new, then a duplicate; a file whose sums disagree imports
// nothing and names the line and field.
func TestBankImportCommand(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := settleGlobals(url)
	g.cli.BankArrivalDays = 5
	sample := filepath.Join("..", "..", "docs", "samples", "bank", "wolph-jejik-sns.sta")
	run := func(files ...string) (string, error) {
		var out bytes.Buffer
		err := (&bankImportCmd{Account: "sns", Files: files}).run(g, &out)
		return out.String(), err
	}
	out, err := run(sample)
	require.NoError(t, err)
	assert.Contains(t, out, "(mt940): 2 lines read, 2 new, 0 duplicates, 0 conflicts; 0 pending (not recorded), 2 statements")
	out, err = run(sample)
	require.NoError(t, err)
	assert.Contains(t, out, "2 lines read, 0 new, 2 duplicates")

	before := countInbox(t, url)
	_, err = run(filepath.Join("..", "..", "docs", "samples", "bank", "wolph-jejik-abnamro.sta"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing imported: line 27, field :62F:")
	assert.Equal(t, before, countInbox(t, url))
}
