// Package svgchart draws the console's bar charts as plain SVG, on the
// server: axes with tick labels, a legend, a title and a description for
// screen readers. No chart library: the maintained Go ones either render
// through JavaScript in the browser (go-echarts), which the console's
// Content-Security-Policy forbids, or bring a font and raster stack
// (gonum/plot) to draw a few rectangles.
package svgchart

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
)

// Series is one named row of values, one per category.
type Series struct {
	Name   string
	Color  string // an SVG color, e.g. "#1f77b4"
	Values []int64
}

// Bars describes a bar chart over categories (days).
type Bars struct {
	ID         string // unique on the page (for aria-labelledby)
	Title      string
	Desc       string // what the chart shows, for screen readers
	Categories []string
	Series     []Series
	// Stacked stacks the series per category; otherwise they stand side
	// by side.
	Stacked bool
	// YLabel names the y axis; Format formats its tick values.
	YLabel string
	Format func(int64) string
	// LabelEvery labels every n-th category on the x axis (default: about
	// ten labels).
	LabelEvery int
}

const (
	width   = 720
	height  = 260
	left    = 80
	right   = 16
	top     = 34
	bottom  = 64
	plotW   = width - left - right
	plotH   = height - top - bottom
	legendY = height - 14
)

// SVG renders the chart. Every text is escaped.
func (b Bars) SVG() template.HTML {
	format := b.Format
	if format == nil {
		format = func(v int64) string { return fmt.Sprint(v) }
	}
	max := int64(0)
	for i := range b.Categories {
		var sum int64
		for _, s := range b.Series {
			v := at(s.Values, i)
			if b.Stacked {
				sum += v
			} else if v > sum {
				sum = v
			}
		}
		if sum > max {
			max = sum
		}
	}
	step, top_ := ticks(max)

	var sb strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-labelledby="%s-t %s-d" class="chart">`,
		width, height, width, height, e(b.ID), e(b.ID))
	fmt.Fprintf(&sb, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, e(b.ID), e(b.Title), e(b.ID), e(b.Desc))
	fmt.Fprintf(&sb, `<text x="%d" y="20" font-size="14" font-weight="bold" fill="#222">%s</text>`, left, e(b.Title))

	y := func(v int64) float64 { return top + plotH - float64(v)/float64(top_)*plotH }
	// Grid and y ticks.
	for v := int64(0); v <= top_; v += step {
		fmt.Fprintf(&sb, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`, left, left+plotW, y(v), y(v))
		fmt.Fprintf(&sb, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#444">%s</text>`, left-6, y(v)+4, e(format(v)))
	}
	if b.YLabel != "" {
		fmt.Fprintf(&sb, `<text x="14" y="%d" font-size="11" fill="#444" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`,
			top+plotH/2, top+plotH/2, e(b.YLabel))
	}
	// Axes.
	fmt.Fprintf(&sb, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`, left, left, top, top+plotH)
	fmt.Fprintf(&sb, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`, left, left+plotW, top+plotH, top+plotH)

	n := len(b.Categories)
	if n > 0 {
		slot := float64(plotW) / float64(n)
		every := b.LabelEvery
		if every <= 0 {
			every = int(math.Ceil(float64(n) / 10))
		}
		inner := slot * 0.8
		for i, cat := range b.Categories {
			x0 := left + slot*float64(i) + slot*0.1
			if b.Stacked {
				var base int64
				for _, s := range b.Series {
					v := at(s.Values, i)
					if v <= 0 {
						continue
					}
					fmt.Fprintf(&sb, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
						x0, y(base+v), inner, y(base)-y(base+v), e(s.Color), e(cat), e(s.Name), e(format(v)))
					base += v
				}
			} else if len(b.Series) > 0 {
				w := inner / float64(len(b.Series))
				for j, s := range b.Series {
					v := at(s.Values, i)
					if v <= 0 {
						continue
					}
					fmt.Fprintf(&sb, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
						x0+w*float64(j), y(v), w, y(0)-y(v), e(s.Color), e(cat), e(s.Name), e(format(v)))
				}
			}
			if i%every == 0 {
				cx := left + slot*float64(i) + slot/2
				fmt.Fprintf(&sb, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#333"/>`, cx, cx, top+plotH, top+plotH+4)
				fmt.Fprintf(&sb, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#444">%s</text>`, cx, top+plotH+17, e(cat))
			}
		}
	}
	// Legend.
	x := left
	for _, s := range b.Series {
		fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`, x, legendY-10, e(s.Color))
		fmt.Fprintf(&sb, `<text x="%d" y="%d" font-size="12" fill="#222">%s</text>`, x+16, legendY, e(s.Name))
		x += 24 + 8*len(s.Name) + 16
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String()) //nolint:gosec // built above with every text escaped
}

func at(vs []int64, i int) int64 {
	if i < len(vs) && vs[i] > 0 {
		return vs[i]
	}
	return 0
}

// ticks returns a "nice" step (1, 2 or 5 times a power of ten) giving at
// most five intervals, and the axis top (a multiple of the step >= max).
func ticks(max int64) (step, top int64) {
	if max <= 0 {
		return 1, 4
	}
	raw := float64(max) / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			step = int64(m * pow)
			break
		}
	}
	if step < 1 {
		step = 1
	}
	top = (max + step - 1) / step * step
	return step, top
}
