package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The repository explains itself: README.md is a newcomer's five minutes
// and the rest lives in docs/. These tests keep its links working and the
// README short.

const repoRoot = "../.."

// readmeMaxLines is the README's budget: a new topic gets a page in docs/
// and a row in the README's map, not a section of the README.
const readmeMaxLines = 250

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	n := strings.Count(string(b), "\n")
	require.Less(t, n, readmeMaxLines, "README.md has %d lines: move the detail to a page of docs/ and link it from the README's map", n)
}

// markdownFiles are README.md and every page under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	return files
}

var (
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	hasScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownText is a page's prose: fenced code blocks and inline code
// removed (a link-like text there is code, not a link).
func markdownText(s string) string {
	var out []string
	fence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			out = append(out, "")
			continue
		}
		if fence {
			out = append(out, "")
			continue
		}
		out = append(out, inlineCode.ReplaceAllString(line, "``"))
	}
	return strings.Join(out, "\n")
}

func TestDocsLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		anchors[path] = headingAnchors(string(b))
		return anchors[path]
	}
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for i, line := range strings.Split(markdownText(string(b)), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if hasScheme.MatchString(target) {
					continue // a URL, not a file of the repository
				}
				where := relPath(file) + ":" + strconv.Itoa(i+1)
				path, anchor, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					_, err := os.Stat(resolved)
					require.NoError(t, err, "%s: the link %q points at no file", where, target)
				}
				if anchor != "" && strings.HasSuffix(resolved, ".md") {
					require.True(t, anchorsOf(resolved)[anchor], "%s: the link %q names no heading of %s", where, target, relPath(resolved))
				}
			}
		}
	}
}

func relPath(p string) string {
	r, err := filepath.Rel(repoRoot, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation dropped, spaces to hyphens, repeats numbered.
func headingAnchors(s string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var sb strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				sb.WriteRune(r)
			case r == ' ':
				sb.WriteRune('-')
			}
		}
		slug := sb.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
