package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/adapters/params"
)

// exportPage is how many rows a CSV export reads per query.
const exportPage = 1000

// paramsOf reads a page's query with the parser /v1 uses too.
func paramsOf(r *http.Request) *params.Params { return params.New(r.URL.Query()) }

// maxPageSize bounds a list page's ?limit= (the payments and the inbox
// take one; the default is Config.PageSize): a page of 1,000 rows still
// fits the window (the crawler test measures it).
const maxPageSize = 1000

// listParams are what every list reads: its cursor and whether it is a CSV
// export. The first bad parameter (or cursor) is err.
func listParams[K any](p *params.Params) (after *K, asCSV bool, err error) {
	after, err = decodeCursor[K](p.Get("cursor"))
	asCSV = p.OneOf("format", "csv") == "csv"
	return after, asCSV, firstErr(p.Err(), err)
}

// filterQuery keeps the filter parameters of a list for its links (next
// page, export), without the cursor.
func filterQuery(q url.Values, names ...string) url.Values {
	out := url.Values{}
	for _, n := range names {
		if v := q.Get(n); v != "" {
			out.Set(n, v)
		}
	}
	return out
}

// list is a page of a list: its rows, the filters, and the links.
type list[T any] struct {
	Rows   []T
	Filter url.Values
	Next   string // URL of the next page, "" on the last
	CSV    string // URL of the CSV export of every matching row
	First  bool   // this is the first page
}

func newList[T any](base string, filter url.Values, rows []T, limit int, key func(T) any, first bool) list[T] {
	l := list[T]{Filter: filter, First: first}
	exp := url.Values{}
	for k, v := range filter {
		exp[k] = v
	}
	exp.Set("format", "csv")
	l.CSV = base + "?" + exp.Encode()
	if len(rows) > limit {
		rows = rows[:limit]
		next := url.Values{}
		for k, v := range filter {
			next[k] = v
		}
		next.Set("cursor", encodeCursor(key(rows[len(rows)-1])))
		l.Next = base + "?" + next.Encode()
	}
	l.Rows = rows
	return l
}

// collect gathers what a streaming read port yields.
func collect[T any](read func(fn func(T) error) error) ([]T, error) {
	var out []T
	err := read(func(x T) error {
		out = append(out, x)
		return nil
	})
	return out, err
}

// exportPages writes every page of a paged read, exportPage rows at a
// time, each row after the last row's key. An error ends the download
// short (the status is already sent) and is logged.
func exportPages[T any, K any](c *consoleServer, what string, read func(after *K, limit int) ([]T, error),
	key func(T) K, write func(T)) {
	var after *K
	for {
		rows, err := read(after, exportPage)
		if err != nil {
			c.cfg.Logger.Error("console: export "+what, "err", err)
			return
		}
		for _, x := range rows {
			write(x)
		}
		if len(rows) < exportPage {
			return
		}
		k := key(rows[len(rows)-1])
		after = &k
	}
}

// startCSV sets the headers of a CSV download.
func startCSV(w http.ResponseWriter, name string, cols ...csvexport.Column) *csvexport.Writer {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.csv"`, name, time.Now().UTC().Format("20060102T150405Z")))
	return csvexport.NewWriter(w, cols...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
