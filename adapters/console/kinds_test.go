package console

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/payment"
)

// Every kind the domain opens has a one-line meaning and a to-do in the
// console, and docs/accountants.md's table says the same words (issue 39).
func TestEveryKindIsExplained(t *testing.T) {
	doc, err := os.ReadFile("../../docs/accountants.md")
	require.NoError(t, err)
	for _, k := range payment.ReconKinds() {
		h, ok := helpOf(k)
		if assert.True(t, ok, "kind %s has no help in kinds.go", k) {
			assert.NotEmpty(t, h.Means)
			assert.NotEmpty(t, h.Do)
		}
	}
	for _, h := range kindHelps {
		row := "| `" + h.Kind + "` | " + h.Means + " | " + h.Do + " |"
		assert.True(t, strings.Contains(string(doc), row), "docs/accountants.md lacks the row of %s as kinds.go says it", h.Kind)
	}
}
