package alipay

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/onceledger/onceledger/domain/delivery"
)

// MaxParams bounds the parameters of one notification. A trade_status_sync
// notification has about 35; the bound keeps the work done before the
// signature is checked proportional to a real notification, whatever the
// body limit lets through.
const MaxParams = 128

// param is one form parameter, percent-decoded: key and value are the bytes
// Alipay signed, still in the notification's charset.
type param struct {
	key, value string
}

// form is a notification body as received: its parameters in the order
// they came, each key once.
type form struct {
	params []param
}

// parseForm reads an application/x-www-form-urlencoded body by hand rather
// than with url.ParseQuery, for three reasons: the parameter count is
// bounded before anything is allocated per parameter; a repeated key is
// refused instead of silently kept as a list (Alipay never repeats one, and
// the SDKs would sign the first or a JSON array of both); and the one
// parameter that is base64, sign, keeps a literal '+' (below).
//
// Form rules apply to every other value: '+' is a space and %XX a byte.
// Alipay's server encodes with Java's URLEncoder, which writes a space as
// '+', and signs the value with the space, so a '+' read as '+' would never
// verify. The signature itself arrives percent-encoded (%2B); a literal '+'
// in it can only be a '+', since base64 has no space. (The SDKs parse with
// form rules everywhere, alipay-sdk-nodejs-all through querystring and the
// Java SDK through the servlet container, and then fail such a body: keeping
// the '+' only makes a genuine signature verify, it never lets a wrong one
// through.)
func parseForm(body []byte) (form, error) {
	if n := bytes.Count(body, []byte("&")) + 1; n > MaxParams {
		return form{}, fmt.Errorf("%w: %d form parameters, more than %d", delivery.ErrMalformed, n, MaxParams)
	}
	for i, b := range body {
		if b < 0x20 || b > 0x7e {
			// A form body is percent-encoded ASCII; anything else was not
			// sent by Alipay's encoder and has no defined signed form.
			return form{}, fmt.Errorf("%w: body byte %d (0x%02x) is not form-encoded ASCII", delivery.ErrMalformed, i, b)
		}
	}
	var f form
	seen := make(map[string]bool, 48)
	for seg := range strings.SplitSeq(string(body), "&") {
		if seg == "" {
			continue // "a=1&&b=2", a trailing '&': nothing, as in every form parser
		}
		rawKey, rawValue, _ := strings.Cut(seg, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil || key == "" || !isASCII(key) {
			// Names are ASCII in every Alipay notification, which is also
			// what makes byte order the Java SDK's sort order.
			return form{}, fmt.Errorf("%w: form parameter %q has no valid name", delivery.ErrMalformed, truncate(rawKey))
		}
		if key == "sign" {
			rawValue = strings.ReplaceAll(rawValue, "+", "%2B")
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return form{}, fmt.Errorf("%w: form parameter %q: %v", delivery.ErrMalformed, truncate(key), err)
		}
		if seen[key] {
			return form{}, fmt.Errorf("%w: form parameter %q appears twice", delivery.ErrMalformed, truncate(key))
		}
		seen[key] = true
		f.params = append(f.params, param{key: key, value: value})
	}
	return f, nil
}

// checkUnambiguous refuses the two shapes in which a form can carry the
// signed content of another form. Alipay signs the decoded "k=v" pairs
// joined by '&', so the content cannot tell a '&' or '=' that separates
// parameters from one inside a key or value: "a=1&b=2" is signed by a
// genuine notification with a=1 and b=2, and equally by a copy that sends
// a=1%26b%3D2 alone, or the key a%3D1%26b with the value 2. Such a copy
// verifies and can be recorded before the genuine delivery (a capture whose
// trade_status was folded into trade_no is ignored, and the genuine one then
// only conflicts with it). Genuine keys are names (letters, digits, '_');
// a genuine value may hold a '&' (a subject "A&B") or a '=', but never '&'
// followed by a name and '=', which is exactly a folded parameter. The
// other way, a copy can split a genuine value "x&t b=y" into x and a
// parameter named "t b", which signs the same content when "t b" sorts
// right after the value's key: a key that is not a name is refused too,
// so a value can only be split where it holds '&', a name and '=', which
// such a value already is. Refusing those shapes before verifying leaves
// one reading per signed content.
func (f form) checkUnambiguous() error {
	for _, p := range f.params {
		if strings.ContainsAny(p.key, "&=") {
			return fmt.Errorf("form parameter name %q holds '&' or '=': the signed content would be ambiguous", truncate(p.key))
		}
		if strings.IndexFunc(p.key, func(r rune) bool { return r > 0x7f || !isNameByte(byte(r)) }) >= 0 {
			return fmt.Errorf("form parameter name %q is not a name (letters, digits, '_', '-', '.'): the signed content would be ambiguous", truncate(p.key))
		}
		if p.key == "sign" {
			continue // base64, never part of the signed content
		}
		if name, ok := foldedParam(p.value); ok {
			return fmt.Errorf("form parameter %s holds %q: a parameter folded into a value makes the signed content ambiguous", truncate(p.key), truncate("&"+name+"="))
		}
	}
	return nil
}

// foldedParam reports whether v contains '&' followed by a parameter name
// and '=', and returns the first such name.
func foldedParam(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if v[i] != '&' {
			continue
		}
		j := i + 1
		for j < len(v) && isNameByte(v[j]) {
			j++
		}
		if j > i+1 && j < len(v) && v[j] == '=' {
			return v[i+1 : j], true
		}
	}
	return "", false
}

// isNameByte is a byte of a parameter name. Alipay's names are lower-case
// words joined by '_'; letters of both cases, digits, '_', '-' and '.'
// are taken as name bytes so that no name-like fold slips through.
func isNameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-' || b == '.'
}

// get returns the raw (undecoded-charset) value of key, "" when absent.
func (f form) get(key string) string {
	for _, p := range f.params {
		if p.key == key {
			return p.value
		}
	}
	return ""
}

// signedContent is what Alipay signs: every parameter except sign and
// sign_type, empty values left out, sorted by key, "k=v" joined by '&'
// (alipay-sdk-java-all AlipaySignature.getSignCheckContentV1, which
// rsaCheckV1 verifies asynchronous notifications with). The bytes are the
// percent-decoded ones: the Java SDK verifies content.getBytes(charset), the
// same bytes once the values decode in their charset, which decodeValues
// checks after verification.
//
// sign_type is left out although it is sent: alipay-sdk-nodejs-all's
// checkNotifySign tries with and without it (gateway messages, 生活号 and
// service-market notifications, sign it; payment notifications do not), and
// its published notification verifies without it.
func (f form) signedContent() []byte {
	ps := make([]param, 0, len(f.params))
	size := 0
	for _, p := range f.params {
		if p.key == "sign" || p.key == "sign_type" || p.value == "" {
			continue
		}
		ps = append(ps, p)
		size += len(p.key) + len(p.value) + 2
	}
	// Keys are ASCII (parseForm), so byte order is Java's String order.
	slices.SortFunc(ps, func(a, b param) int { return strings.Compare(a.key, b.key) })
	out := make([]byte, 0, size)
	for i, p := range ps {
		if i > 0 {
			out = append(out, '&')
		}
		out = append(out, p.key...)
		out = append(out, '=')
		out = append(out, p.value...)
	}
	return out
}

// charset returns the encoding the values are in: the charset parameter,
// UTF-8 when absent. Alipay sends utf-8, gbk or gb2312 (a subset of GBK).
func (f form) charset() (encoding.Encoding, error) {
	cs := f.get("charset")
	switch strings.ToLower(cs) {
	case "", "utf-8", "utf8":
		return nil, nil
	case "gbk", "gb2312", "cp936":
		return simplifiedchinese.GBK, nil
	case "gb18030":
		return simplifiedchinese.GB18030, nil
	}
	return nil, fmt.Errorf("%w: charset %q is not utf-8, gbk or gb2312", delivery.ErrMalformed, truncate(cs))
}

// decodeValues returns every parameter's value converted to UTF-8. A value
// that is not valid in the charset is malformed: it must decode to text
// that encodes back to exactly the bytes that were signed.
func (f form) decodeValues() (map[string]string, error) {
	enc, err := f.charset()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(f.params))
	for _, p := range f.params {
		v, err := decodeCharset(p.value, enc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not valid %s", delivery.ErrMalformed, p.key, charsetName(enc))
		}
		out[p.key] = v
	}
	return out, nil
}

func decodeCharset(s string, enc encoding.Encoding) (string, error) {
	if enc == nil || isASCII(s) {
		if !utf8.ValidString(s) {
			return "", fmt.Errorf("not UTF-8")
		}
		return s, nil
	}
	// x/text decoders replace an invalid sequence with U+FFFD instead of
	// failing; encoding back (U+FFFD has no GBK code) and comparing catches
	// it, and any other sequence that does not round-trip.
	u, err := enc.NewDecoder().String(s)
	if err != nil {
		return "", err
	}
	back, err := enc.NewEncoder().String(u)
	if err != nil || back != s {
		return "", fmt.Errorf("does not round-trip")
	}
	return u, nil
}

func charsetName(enc encoding.Encoding) string {
	switch enc {
	case nil:
		return "UTF-8"
	case simplifiedchinese.GB18030:
		return "GB18030"
	}
	return "GBK"
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// truncate keeps error messages short when a name or value is hostile.
func truncate(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
