package readmodel

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/projections"
)

// The read model's side of a rebuild (projections.ShadowDB), by step:
//
//   - shadow.go: which tables a rebuild treats and how (tableSpecs), and
//     the shadow tables' life: made, finished after the bulk load, dropped;
//   - shadow_index.go: the live tables' keys and indexes, built on the
//     shadows that will replace them;
//   - shadow_checksum.go: per-group checksums of live and shadow tables,
//     in an exported snapshot of the live ones;
//   - shadow_compare.go: row counts, sizes and the row-by-row comparison;
//   - shadow_swap.go: bringing the live tables to their shadows' content.

// tableSpec says how a rebuild treats a read-model table: which columns
// identify a row, which hold data to compare (ids from sequences and
// updated_at wall-clock stamps legitimately differ), which other columns a
// repair in place copies, how rows are grouped for the checksum comparison
// (SQL expressions over the table's columns, never NULL), and whether the
// shadow needs its unique constraints during the load (tables written with
// ON CONFLICT upserts do; ledger_entries is COPYed and account_balances
// computed at the end).
type tableSpec struct {
	key, compare, extra []string
	group               []string
	eagerKeys           bool
	// groupFilter, if set, adds to in (the condition that a row's group
	// key is one of groups, $1) conditions on plain columns that every row
	// of those groups meets, with their arguments ($2...): a repair in
	// place selects its groups' rows by an index of the live table then,
	// and skips the group key's formatting for the others, instead of
	// formatting it for every row of both tables (seconds for a ledger of
	// millions of entries, while the live projectors wait).
	groupFilter func(in string, groups []string) (string, []any)
}

var tableSpecs = map[string]tableSpec{
	"ledger_entries": {
		key: []string{"event_id", "posting_index"},
		compare: []string{"stream_id", "event_type", "provider", "account", "currency", "amount",
			"occurred_at", "recorded_at", "position_commit", "position_prepare",
			"period", "late_adjustment", "adjusts_period"},
		// Per account, currency and (UTC) day of the fact. The day is
		// spelled by to_char, not ::date::text, whose spelling follows the
		// session's DateStyle: the checksum pass names the same groups in Go
		// (checksum.go, YYYY-MM-DD), and a server set to another style would
		// make every group differ.
		group:       []string{"account", "currency", "to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"},
		groupFilter: ledgerGroupFilter,
	},
	// The calendar's rows come from the periods stream's events (their
	// times are the events' own), so a rebuild reproduces them exactly;
	// both tables are written with upserts.
	"periods": {
		key: []string{"period"},
		compare: []string{"status", "books_start", "zone", "closed_at", "closed_by", "close_note", "close_event_id",
			"reopened_at", "reopened_by", "reopen_reason", "reopen_event_id", "content_hash"},
		group:     []string{"period"},
		eagerKeys: true,
	},
	"period_balances": {
		key:       []string{"period", "account", "currency"},
		compare:   []string{"opening", "debits", "credits", "closing", "content_hash"},
		group:     []string{"period", "currency"},
		eagerKeys: true,
	},
	"account_balances": {
		key:     []string{"account", "currency"},
		compare: []string{"balance", "entry_count"},
		extra:   []string{"updated_at"},
		group:   []string{"account", "currency"},
	},
	"payments": {
		key: []string{"provider", "payment_id"},
		compare: []string{"stream_id", "status", "currency", "authorized_amount", "captured_amount", "fee_amount",
			"refunded_amount", "refund_pending_amount", "dispute_open_amount", "dispute_lost_amount",
			"failed", "canceled", "version", "updated_at", "failed_amount", "sub_merchant"},
		group:     []string{"provider", "coalesce(currency, '')", "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"},
		eagerKeys: true,
	},
	// Written with ON CONFLICT DO NOTHING; rows are never updated.
	"payment_ids": {
		key:       []string{"business_id", "stream_id", "kind"},
		group:     []string{"kind"},
		eagerKeys: true,
	},
	"reconciliation_items": {
		key: []string{"stream_id", "kind", "item_key"},
		compare: []string{"status", "provider", "payment_id", "details", "opened_at", "resolved_at",
			"opened_event_id", "resolved_event_id", "resolved_by", "note"},
		group:     []string{"provider", "kind"},
		eagerKeys: true,
	},
	"settlement_lines": {
		key: []string{"provider", "line_key"},
		compare: []string{"kind", "source_type", "line_id", "payment_id", "capture_id", "refund_id", "dispute_id",
			"gross", "fee", "net", "currency", "original_amount", "original_currency", "exchange_rate", "payout_id",
			"occurred_at", "available_on", "stream_id"},
		group:     []string{"provider", "currency"},
		eagerKeys: true,
	},
	// Provider balances (assertions.go): written with ON CONFLICT, and
	// balance_assertions' ledger figures updated in place.
	"balance_assertions": {
		key: []string{"stream_id", "point_key"},
		compare: []string{"provider", "account", "currency", "as_of", "stated", "ledger", "source", "actor", "note",
			"recorded_at", "event_id"},
		group:     []string{"account", "currency"},
		eagerKeys: true,
	},
	// COPYed in a rebuild (copyMovements): its key comes after the load.
	"balance_movements": {
		key:     []string{"event_id", "posting_index"},
		compare: []string{"account", "currency", "effective_at", "amount"},
		group:   []string{"account", "currency", "to_char(effective_at AT TIME ZONE 'UTC', 'YYYY-MM')"},
	},
	"ledger_actors": {
		key:       []string{"event_id"},
		compare:   []string{"actor", "note", "kind"},
		group:     []string{"kind"},
		eagerKeys: true,
	},
	// Provider days (providerdays.go): rows rewritten whole, in feed order.
	"provider_days": {
		key: []string{"provider", "day"},
		compare: []string{"zone", "events", "webhook_facts", "report_facts", "report_lines", "lines_without_webhook",
			"stated_balances", "covered", "content_hash", "last_commit", "last_prepare", "awaiting_report_facts"},
		group:     []string{"provider", "to_char(day, 'YYYY-MM')"},
		eagerKeys: true,
	},
	"day_facts": {
		key:       []string{"stream_id", "fact"},
		compare:   []string{"provider", "day", "settled"},
		group:     []string{"provider", "to_char(day, 'YYYY-MM')"},
		eagerKeys: true,
	},
	// Payout batches' links (projections/batches.go): upserted in feed order.
	"batch_links": {
		key:       []string{"link"},
		compare:   []string{"payout_id", "currency", "amount", "event_id"},
		group:     []string{"left(link, 5)"},
		eagerKeys: true,
	},
	"item_days": {
		key:       []string{"stream_id", "kind", "item_key"},
		compare:   []string{"provider", "day"},
		group:     []string{"provider", "kind"},
		eagerKeys: true,
	},
	"payouts": {
		key: []string{"provider", "payout_id"},
		compare: []string{"amount", "currency", "arrival_date", "paid", "failed", "status", "line_count",
			"lines_net", "difference", "lines_by_currency"},
		group:     []string{"provider", "coalesce(currency, '')"},
		eagerKeys: true,
	},
	// The bank read models (bank_writer.go): lines and statements are
	// inserted once; a line's status and payouts change when it matches.
	"bank_statement_lines": {
		key: []string{"account", "line_key"},
		compare: []string{"reference", "format", "statement", "booked_on", "value_on", "amount", "currency", "reversal",
			"code", "description", "status", "payouts", "event_id"},
		extra:     []string{"recorded_at"},
		group:     []string{"account", "currency"},
		eagerKeys: true,
	},
	"bank_statements": {
		key: []string{"account", "statement_key"},
		compare: []string{"format", "statement_id", "seq", "page", "covers", "currency", "opening", "opening_on",
			"closing", "closing_on", "entries", "event_id"},
		group:     []string{"account"},
		eagerKeys: true,
	},
	"bank_payouts": {
		key:       []string{"provider", "payout_id"},
		compare:   []string{"account", "line_key", "booked_on", "line_amount", "line_currency", "returned"},
		group:     []string{"provider", "line_currency"},
		eagerKeys: true,
	},
}

// shadowIndexSuffix marks index and constraint names on shadow tables
// (names are unique per schema); Swap renames them to the live names.
const shadowIndexSuffix = "_sh"

func checkTables(tables []string) error {
	for _, t := range tables {
		if _, ok := tableSpecs[t]; !ok {
			return fmt.Errorf("readmodel: %q is not a read-model table", t)
		}
	}
	return nil
}

// PrepareShadow recreates empty shadow tables.
func (s *Store) PrepareShadow(ctx context.Context, tables []string) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, t := range tables {
			sh := quoted(t + shadowSuffix)
			// LIKE copies columns, defaults (ledger_entries.id keeps drawing
			// from the live sequence) and NOT NULL, but no CHECK constraints
			// and no indexes: a shadow that replaces its live table gets them
			// after the load (IndexShadow), and one that only serves the
			// comparison never needs them (rows repaired into a live table
			// pass its checks there).
			//
			// UNLOGGED: the load writes no WAL. A shadow is worth nothing
			// until the swap, and a crash that empties it only repeats the
			// rebuild; one that replaces its live table is made LOGGED first
			// (IndexShadow), which rewrites it whole. Except the shadow of an
			// empty live table: it replaces it whenever it gets a row (every
			// row differs), so it is LOGGED from the start, its WAL written
			// by the load instead of by a rewrite of the loaded table after
			// it.
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+sh); err != nil {
				return err
			}
			var empty bool
			if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM `+quoted(t)+`)`).Scan(&empty); err != nil {
				return err
			}
			persistence := "UNLOGGED "
			if empty {
				persistence = ""
			}
			if _, err := tx.Exec(ctx, `CREATE `+persistence+`TABLE `+sh+` (LIKE `+quoted(t)+
				` INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING STORAGE)`); err != nil {
				return err
			}
			if tableSpecs[t].eagerKeys {
				if err := copyConstraints(ctx, tx, t); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// copyConstraints adds the live table's primary key, unique and exclusion
// constraints to its shadow, unless there already.
func copyConstraints(ctx context.Context, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `
		SELECT c.conname, pg_get_constraintdef(c.oid)
		FROM pg_constraint c
		WHERE c.conrelid = $1::regclass AND c.contype IN ('p', 'u', 'x')
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint s
		                  WHERE s.conrelid = $2::regclass AND s.conname = c.conname || $3)
		ORDER BY c.contype, c.conname`, quoted(table), quoted(table+shadowSuffix), shadowIndexSuffix)
	if err != nil {
		return err
	}
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Def string }])
	if err != nil {
		return err
	}
	for _, d := range defs {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+quoted(table+shadowSuffix)+` ADD CONSTRAINT `+
			quoted(d.Name+shadowIndexSuffix)+` `+d.Def); err != nil {
			return err
		}
	}
	return nil
}

// FinishBulk fills the shadow balances: with totals if the rebuild added
// them up while loading the entries (nil: from the loaded entries, in one
// scan). It runs once, after the last entry is loaded.
func (s *Store) FinishBulk(ctx context.Context, tables []string, totals []projections.BalanceTotal) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	if !slices.Contains(tables, "account_balances") || !slices.Contains(tables, "ledger_entries") {
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `TRUNCATE account_balances_shadow`); err != nil {
			return err
		}
		if totals == nil {
			_, err := tx.Exec(ctx, `
				INSERT INTO account_balances_shadow (account, currency, balance, entry_count, updated_at)
				SELECT account, currency, sum(amount)::bigint, count(*), now()
				FROM ledger_entries_shadow GROUP BY account, currency`)
			return err
		}
		accts, curs := make([]string, len(totals)), make([]string, len(totals))
		sums, counts := make([]int64, len(totals)), make([]int64, len(totals))
		for i, t := range totals {
			accts[i], curs[i], sums[i], counts[i] = t.Account, string(t.Currency), t.Balance, t.Entries
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO account_balances_shadow (account, currency, balance, entry_count, updated_at)
			SELECT a, c, b, n, now() FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS t(a, c, b, n)`,
			accts, curs, sums, counts)
		return err
	})
}

// DropShadow drops the shadow tables.
func (s *Store) DropShadow(ctx context.Context, tables []string) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := s.pool.Exec(ctx, `DROP TABLE IF EXISTS `+quoted(t+shadowSuffix)); err != nil {
			return err
		}
	}
	return nil
}

// ledgerGroupFilter is ledger_entries' groupFilter: a group key is
// account/currency/day (concat_ws; the account may hold a slash, the
// currency and the day hold none), so its rows have one of the groups'
// accounts and currencies and occur within their days, which
// ledger_entries_account_idx (account, currency, occurred_at) finds. A
// key not of that shape (none is) only leaves the filter out.
func ledgerGroupFilter(in string, groups []string) (string, []any) {
	var accts, curs []string
	var first, last time.Time
	for _, g := range groups {
		i := strings.LastIndexByte(g, '/')
		j := strings.LastIndexByte(g[:max(i, 0)], '/')
		if i < 0 || j < 0 {
			return in, nil
		}
		day, err := time.Parse(time.DateOnly, g[i+1:])
		if err != nil {
			return in, nil
		}
		accts, curs = append(accts, g[:j]), append(curs, g[j+1:i])
		if first.IsZero() || day.Before(first) {
			first = day
		}
		if day.After(last) {
			last = day
		}
	}
	if len(groups) == 0 {
		return in, nil
	}
	return `account = ANY($2) AND currency = ANY($3) AND occurred_at >= $4 AND occurred_at < $5 AND ` + in,
		[]any{accts, curs, first, last.AddDate(0, 0, 1)}
}
