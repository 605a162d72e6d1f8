package console

import (
	"html/template"
	"slices"
	"time"

	"github.com/onceledger/onceledger/adapters/console/svgchart"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections/views"
)

// chartDays is how many days the overview charts cover.
const chartDays = 30

// maxVolumeCharts bounds the currencies charted (the busiest first).
const maxVolumeCharts = 4

type chartView struct {
	SVG   template.HTML
	Empty bool
}

func dayLabels(from time.Time) ([]string, map[time.Time]int) {
	labels := make([]string, chartDays)
	index := make(map[time.Time]int, chartDays)
	for i := range chartDays {
		d := from.AddDate(0, 0, i)
		labels[i] = d.Format("01-02")
		index[d] = i
	}
	return labels, index
}

// volumeCharts draws one chart per currency: captures, refunds and
// disputes per day.
func volumeCharts(from time.Time, vol []views.DayVolume) []chartView {
	labels, index := dayLabels(from)
	type series struct{ cap, ref, dis []int64 }
	by := map[string]*series{}
	total := map[string]int64{}
	for _, v := range vol {
		i, ok := index[v.Day.UTC().Truncate(24*time.Hour)]
		if !ok {
			continue
		}
		s := by[v.Currency]
		if s == nil {
			s = &series{make([]int64, chartDays), make([]int64, chartDays), make([]int64, chartDays)}
			by[v.Currency] = s
		}
		s.cap[i] += v.Captured
		s.ref[i] += v.Refunded
		s.dis[i] += v.Disputed
		total[v.Currency] += v.Captured
	}
	currencies := make([]string, 0, len(by))
	for c := range by {
		currencies = append(currencies, c)
	}
	slices.SortFunc(currencies, func(a, b string) int {
		if total[a] != total[b] {
			if total[a] > total[b] {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	if len(currencies) > maxVolumeCharts {
		currencies = currencies[:maxVolumeCharts]
	}
	var out []chartView
	for _, cur := range currencies {
		s := by[cur]
		cur := cur
		out = append(out, chartView{SVG: svgchart.Bars{
			ID:    "volume-" + cur,
			Title: "Daily volume, " + cur,
			Desc: "Captures, refunds and disputes opened per UTC day over the last " + itoaInt(chartDays) +
				" days, in " + cur + "; each bar's tooltip gives the amount.",
			Categories: labels,
			Series: []svgchart.Series{
				{Name: "captures", Color: "#1f6fb4", Values: s.cap},
				{Name: "refunds", Color: "#e07b00", Values: s.ref},
				{Name: "disputes", Color: "#c0392b", Values: s.dis},
			},
			YLabel: cur,
			Format: func(v int64) string { return money.FormatMinor(v, money.Currency(cur)) },
		}.SVG()})
	}
	return out
}

var statusColors = map[string]string{
	"applied": "#2e8b57", "ignored": "#999999", "received": "#1f6fb4", "unverified": "#e0b000",
	"invalid": "#c0392b", "failed": "#7b1fa2",
}

// inboxChart stacks each day's deliveries by status.
func inboxChart(from time.Time, mix []views.DayOutcome) chartView {
	labels, index := dayLabels(from)
	by := map[string][]int64{}
	var any bool
	for _, m := range mix {
		i, ok := index[m.Day.UTC().Truncate(24*time.Hour)]
		if !ok {
			continue
		}
		if by[m.Status] == nil {
			by[m.Status] = make([]int64, chartDays)
		}
		by[m.Status][i] += m.Count
		any = any || m.Count > 0
	}
	var series []svgchart.Series
	for _, st := range inboxStatuses {
		if v, ok := by[st]; ok {
			series = append(series, svgchart.Series{Name: st, Color: statusColors[st], Values: v})
		}
	}
	return chartView{Empty: !any, SVG: svgchart.Bars{
		ID:         "inbox-mix",
		Title:      "Inbox outcomes per day",
		Desc:       "Deliveries first seen per UTC day over the last " + itoaInt(chartDays) + " days, stacked by status.",
		Categories: labels,
		Series:     series,
		Stacked:    true,
		YLabel:     "deliveries",
	}.SVG()}
}

func itoaInt(n int) string { return itoa(int64(n)) }
