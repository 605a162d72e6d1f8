package wechatpay

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRefuses(t *testing.T) {
	k := keys(t)
	api := [][]byte{[]byte(apiKey)}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	smallDER, err := x509.MarshalPKIXPublicKey(&small.PublicKey)
	require.NoError(t, err)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	require.NoError(t, err)
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	for name, c := range map[string]struct {
		keys  map[string][]byte
		api   [][]byte
		mchid []string
		tol   time.Duration
		want  string
	}{
		"no key":                        {nil, api, []string{mchID}, 0, EnvKeys},
		"a 16-byte APIv3 key":           {k.config(), [][]byte{[]byte("testMchAPIv3Key0")}, []string{mchID}, 0, EnvAPIv3Keys + " entry 1 is 16 bytes"},
		"a 31-byte APIv3 key":           {k.config(), [][]byte{[]byte(apiKey), []byte(apiKey[:31])}, []string{mchID}, 0, EnvAPIv3Keys + " entry 2 is 31 bytes"},
		"a 33-byte APIv3 key":           {k.config(), [][]byte{[]byte(apiKey + "x")}, []string{mchID}, 0, EnvAPIv3Keys},
		"no APIv3 key":                  {k.config(), nil, []string{mchID}, 0, EnvAPIv3Keys},
		"no merchant":                   {k.config(), api, []string{" "}, 0, EnvMchIDs},
		"a merchant id that is not one": {k.config(), api, []string{"19000001x9"}, 0, "not a merchant id"},
		"negative tolerance":            {k.config(), api, []string{mchID}, -time.Second, "tolerance"},
		"a certificate under another serial": {map[string][]byte{"D7CE59D1F522D701": k.certPEM}, api, []string{mchID}, 0,
			"is a certificate with serial " + certSerial},
		"a certificate under a key id":     {map[string][]byte{pubKeyID: k.certPEM}, api, []string{mchID}, 0, "is a certificate"},
		"a public key under a serial":      {map[string][]byte{certSerial: k.pubPEM}, api, []string{mchID}, 0, "configure it under its PUB_KEY_ID_"},
		"not PEM":                          {map[string][]byte{pubKeyID: []byte("MIIBIjAN")}, api, []string{mchID}, 0, "not PEM"},
		"two PEM blocks":                   {map[string][]byte{pubKeyID: append(append([]byte{}, k.pubPEM...), k.pubPEM...)}, api, []string{mchID}, 0, "more than one PEM block"},
		"a private key":                    {map[string][]byte{pubKeyID: pemOf("PRIVATE KEY", []byte{1})}, api, []string{mchID}, 0, `"PRIVATE KEY" PEM block`},
		"RSA-1024":                         {map[string][]byte{pubKeyID: pemOf("PUBLIC KEY", smallDER)}, api, []string{mchID}, 0, "RSA-1024"},
		"ECDSA":                            {map[string][]byte{pubKeyID: pemOf("PUBLIC KEY", ecDER)}, api, []string{mchID}, 0, "not an RSA key"},
		"one key twice, in another case":   {map[string][]byte{pubKeyID: k.pubPEM, strings.ToLower(pubKeyID): k.pubPEM}, api, []string{mchID}, 0, "twice"},
		"a serial that is blank":           {map[string][]byte{" ": k.pubPEM}, api, []string{mchID}, 0, "without its serial"},
		"a public key that does not parse": {map[string][]byte{pubKeyID: pemOf("PUBLIC KEY", []byte{1, 2})}, api, []string{mchID}, 0, pubKeyID},
	} {
		_, err := New(c.keys, c.api, c.mchid, c.tol)
		assert.ErrorContains(t, err, c.want, name)
		assert.NotContains(t, err.Error(), apiKey, "%s: the error echoes a secret", name)
	}
	a, err := New(k.config(), api, []string{mchID}, 0)
	require.NoError(t, err)
	assert.Equal(t, DefaultTolerance, a.verifier.tolerance, "tolerance 0 is the default")
	assert.Equal(t, Name, a.Name())
}

func TestParseConfig(t *testing.T) {
	files := map[string][]byte{"/etc/wechatpay/cert.pem": []byte("CERT"), "/etc/wechatpay/pub.pem": []byte("PUB")}
	read := func(name string) ([]byte, error) {
		if b, ok := files[name]; ok {
			return b, nil
		}
		return nil, errors.New("open " + name + ": no such file or directory")
	}
	got, err := ParseKeys([]string{certSerial + "=/etc/wechatpay/cert.pem", " ", " " + pubKeyID + " = /etc/wechatpay/pub.pem "}, read)
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{certSerial: []byte("CERT"), pubKeyID: []byte("PUB")}, got)
	for entries, want := range map[string]string{
		"/etc/wechatpay/cert.pem":                              "entry 1 (\"/etc/wechatpay/cert.pem\") is not SERIAL=FILE",
		"=/etc/wechatpay/cert.pem":                             "is not SERIAL=FILE",
		certSerial + "=":                                       "is not SERIAL=FILE",
		certSerial + "=/nope.pem":                              "no such file",
		"AB=/etc/wechatpay/cert.pem,ab=/etc/wechatpay/pub.pem": "names ab twice",
	} {
		_, err := ParseKeys(strings.Split(entries, ","), read)
		assert.ErrorContains(t, err, want, entries)
		assert.ErrorContains(t, err, EnvKeys, entries)
	}

	ks, err := ParseAPIv3Keys([]string{apiKey, "", " " + oldAPIKey + " "})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte(apiKey), []byte(oldAPIKey)}, ks)
	_, err = ParseAPIv3Keys([]string{apiKey, "testMchAPIv3Key0"})
	assert.ErrorContains(t, err, EnvAPIv3Keys+" entry 2 is 16 bytes")
	assert.NotContains(t, err.Error(), "testMchAPIv3Key0", "the error echoes the key")

	assert.Equal(t, []string{mchID, spMchID}, ParseMerchantIDs([]string{" " + mchID, "", spMchID + " "}))
}

func TestConfigCheck(t *testing.T) {
	full := Config{Keys: []string{"PUB_KEY_ID_1=/nonexistent.pem"}, APIv3Keys: []string{apiKey}, MchIDs: []string{mchID}}
	require.NoError(t, full.Check())
	assert.True(t, full.Configured())
	require.NoError(t, (&Config{}).Check(), "none configures nothing")
	assert.False(t, (&Config{}).Configured())
	half := full
	half.MchIDs = nil
	assert.False(t, half.Configured())
	assert.ErrorContains(t, half.Check(), "needs "+EnvMchIDs)
	half = Config{APIv3Keys: []string{apiKey}}
	assert.ErrorContains(t, half.Check(), EnvAPIv3Keys+" needs "+EnvKeys+" and "+EnvMchIDs)
	short := full
	short.APIv3Keys = []string{"testMchAPIv3Key0"} // the published vector's 16-byte key
	assert.ErrorContains(t, short.Check(), EnvAPIv3Keys+" entry 1 is 16 bytes")
}
