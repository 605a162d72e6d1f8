package svgchart_test

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/console/svgchart"
)

func TestBarsAreWellFormedWithAxesAndEscapedLabels(t *testing.T) {
	for _, stacked := range []bool{false, true} {
		svg := string(svgchart.Bars{
			ID: "c1", Title: "Volume <USD>", Desc: "daily & more", YLabel: "USD",
			Categories: []string{"11-01", "11-02", "11-03"},
			Series: []svgchart.Series{
				{Name: "captures", Color: "#1f77b4", Values: []int64{1000, 0, 2500}},
				{Name: `refunds"<x>`, Color: "#ff7f0e", Values: []int64{0, 300, 100}},
			},
			Stacked: stacked,
		}.SVG())
		require.NoError(t, xml.Unmarshal([]byte(svg), new(struct{})), "well-formed XML: %s", svg)
		assert.Contains(t, svg, "Volume &lt;USD&gt;")
		assert.Contains(t, svg, "refunds&#34;&lt;x&gt;")
		assert.NotContains(t, svg, "<x>")
		assert.Contains(t, svg, ">11-03</text>")
		top := map[bool]string{false: ">2500</text>", true: ">3000</text>"}[stacked]
		assert.Contains(t, svg, top, "the axis reaches a nice value at or above the highest bar")
		assert.Equal(t, 4, strings.Count(svg, "<rect x=")-2, "one bar per positive value, plus two legend keys")
	}
}

func TestEmptyChart(t *testing.T) {
	svg := string(svgchart.Bars{ID: "e", Title: "Nothing"}.SVG())
	require.NoError(t, xml.Unmarshal([]byte(svg), new(struct{})))
}
