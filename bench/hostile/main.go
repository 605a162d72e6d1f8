// Command hostile is the hostile half of the soak of bench/hostile.sh
// (issue 33, "Done when"): beside the legitimate traffic cmd/loadgen
// sends, it holds and abuses a running server, on loopback only, for a
// bounded time:
//
//   - idle connections (--idle): half never send a request, half send one
//     without a token (401) and then idle; each one the server closes is
//     opened again after --redial;
//   - long polls (--polls) of GET /v1/events?wait=60s with a read token, for
//     a type the legitimate traffic never produces, so that they wait; a
//     429 is retried after its Retry-After;
//   - forged notifications (--forged-rate per second): Standard Webhooks and
//     Stripe deliveries with signatures that do not verify, and an Alipay
//     form signed with nothing;
//   - decompression bombs (--bomb-every): a WeChat Pay bill gzip that
//     inflates to 256 MiB in one line, and an Alipay zip of
//     --zip-entries empty entries, uploaded with an admin token;
//   - slow uploads (--slow): settlement uploads and webhook bodies
//     announced and then sent one byte every --slow-every.
//
// It prints what the server answered to each kind. The verdict on the
// legitimate traffic (failures, p99, ledger against its model) is
// loadgen's; peak RSS and load average are the script's.
//
//	go run ./bench/hostile --url http://127.0.0.1:8080 --token READ --admin-token ADMIN --duration 10m
//
// Exit status: 0 done, 2 could not run (a URL off loopback among them).
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	URL        string
	Token      string
	AdminToken string
	Duration   time.Duration
	Idle       int
	Polls      int
	PollType   string
	ForgedRate float64
	BombEvery  time.Duration
	BombMiB    int
	ZipEntries int
	Slow       int
	SlowEvery  time.Duration
	Source     string
	Redial     time.Duration
}

func main() {
	var o options
	fs := flag.NewFlagSet("hostile", flag.ExitOnError)
	fs.StringVar(&o.URL, "url", "http://127.0.0.1:8080", "the server (loopback only)")
	fs.StringVar(&o.Token, "token", "", "a read token (long polls); none: polls get 401 and count as such")
	fs.StringVar(&o.AdminToken, "admin-token", "", "an admin token (bombs and slow settlement uploads); none: those get 401")
	fs.DurationVar(&o.Duration, "duration", 10*time.Minute, "how long to run")
	fs.IntVar(&o.Idle, "idle", 2000, "idle connections held")
	fs.IntVar(&o.Polls, "polls", 500, "long polls held")
	fs.StringVar(&o.PollType, "poll-type", "period.reopened", "the type the long polls wait for (one the legitimate traffic never produces)")
	fs.Float64Var(&o.ForgedRate, "forged-rate", 50, "forged notifications per second")
	fs.DurationVar(&o.BombEvery, "bomb-every", 15*time.Second, "one gzip bomb and one zip bomb this often (0 = none)")
	fs.IntVar(&o.BombMiB, "bomb-mib", 256, "what the gzip bomb inflates to, MiB")
	fs.IntVar(&o.ZipEntries, "zip-entries", 100_000, "empty entries of the zip bomb")
	fs.IntVar(&o.Slow, "slow", 16, "slow uploads held (half settlement uploads, half webhook bodies)")
	fs.DurationVar(&o.SlowEvery, "slow-every", 2*time.Second, "a slow upload sends one byte this often")
	fs.StringVar(&o.Source, "source", "127.0.0.2", "the loopback address hostile connections come from")
	fs.DurationVar(&o.Redial, "redial", time.Second, "an idle connection the server closed is opened again after this long")
	_ = fs.Parse(os.Args[1:])
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(2)
	}
}

// loopbackOnly refuses a URL or source whose host is not a loopback
// address: this tool must never be pointed at someone else's server.
func loopbackOnly(o options) (host string, err error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("--url %q: an http://HOST:PORT URL", o.URL)
	}
	ips, err := net.LookupIP(u.Hostname())
	if err != nil {
		return "", fmt.Errorf("--url: %w", err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return "", fmt.Errorf("--url %q resolves to %s, not a loopback address: refused", o.URL, ip)
		}
	}
	if ip := net.ParseIP(o.Source); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("--source %q is not a loopback address", o.Source)
	}
	return u.Host, nil
}

func run(o options) error {
	host, err := loopbackOnly(o)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()

	h := &hostile{o: o, host: host, tally: newTally()}
	h.dialer = &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(o.Source)}}
	h.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: nil, DialContext: h.dialer.DialContext, MaxIdleConnsPerHost: 64,
	}}
	if o.BombEvery > 0 {
		fmt.Println("hostile: building the bombs")
		if h.gzipBomb, err = gzipBomb(o.BombMiB); err != nil {
			return err
		}
		if h.zipBomb, err = zipBomb(o.ZipEntries); err != nil {
			return err
		}
		fmt.Printf("hostile: gzip bomb %d KiB (inflates to %d MiB), zip bomb %d KiB (%d entries)\n",
			len(h.gzipBomb)>>10, o.BombMiB, len(h.zipBomb)>>10, o.ZipEntries)
	}
	start := time.Now()
	fmt.Printf("hostile: running for %s against %s from %s\n", o.Duration, o.URL, o.Source)
	var wg sync.WaitGroup
	for i := range o.Idle {
		wg.Go(func() { h.idle(ctx, i%2 == 1) })
	}
	for range o.Polls {
		wg.Go(func() { h.poll(ctx) })
	}
	for i := range o.Slow {
		wg.Go(func() { h.slow(ctx, i%2 == 0) })
	}
	if o.ForgedRate > 0 {
		wg.Go(func() { h.forged(ctx) })
	}
	if o.BombEvery > 0 {
		wg.Go(func() { h.bombs(ctx) })
	}
	wg.Wait()
	h.tally.print(os.Stdout, time.Since(start))
	return nil
}

type hostile struct {
	o        options
	host     string
	dialer   *net.Dialer
	client   *http.Client
	tally    *tally
	gzipBomb []byte
	zipBomb  []byte
}

// pause waits d or until ctx ends; false: ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// idle holds one idle connection at a time until ctx ends: never sending
// anything, or (used) sending one request without a token first.
func (h *hostile) idle(ctx context.Context, used bool) {
	kind := "idle-fresh"
	if used {
		kind = "idle-after-401"
	}
	for ctx.Err() == nil {
		c, err := h.dialer.DialContext(ctx, "tcp", h.host)
		if err != nil {
			h.tally.add(kind, "dial error")
			pause(ctx, time.Second)
			continue
		}
		stopClose := context.AfterFunc(ctx, func() { _ = c.Close() })
		br := bufio.NewReader(c)
		if used {
			_, _ = fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\n\r\n", h.host)
			if resp, err := http.ReadResponse(br, nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				h.tally.add(kind, strconv.Itoa(resp.StatusCode))
			} else {
				h.tally.add(kind, "no answer")
			}
		}
		held := time.Now()
		_, _ = br.ReadByte() // until the server closes it (timeout or room made for another)
		stopClose()
		_ = c.Close()
		if ctx.Err() == nil {
			h.tally.add(kind, "closed by the server")
			h.tally.observe(kind+" held", time.Since(held))
		} else {
			h.tally.add(kind, "still held at the end")
		}
		pause(ctx, h.o.Redial)
	}
}

// poll holds one long poll at a time until ctx ends.
func (h *hostile) poll(ctx context.Context) {
	after := ""
	for ctx.Err() == nil {
		q := url.Values{"wait": {"60s"}, "type": {h.o.PollType}}
		if after != "" {
			q.Set("after", after)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.o.URL+"/v1/events?"+q.Encode(), nil)
		if h.o.Token != "" {
			req.Header.Set("Authorization", "Bearer "+h.o.Token)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				h.tally.add("long-poll", "transport error")
				pause(ctx, time.Second)
			}
			continue
		}
		var page struct {
			Next string `json:"next"`
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		h.tally.add("long-poll", strconv.Itoa(resp.StatusCode))
		switch resp.StatusCode {
		case http.StatusOK:
			if jsonNext(body, &page.Next) {
				after = page.Next
			}
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || wait <= 0 {
				wait = 1
			}
			pause(ctx, time.Duration(wait)*time.Second)
		default:
			pause(ctx, time.Second)
		}
	}
}

// jsonNext finds "next":"…" in a page without decoding its events.
func jsonNext(body []byte, next *string) bool {
	_, rest, ok := bytes.Cut(body, []byte(`"next":"`))
	if !ok {
		return false
	}
	v, _, ok := bytes.Cut(rest, []byte(`"`))
	if ok {
		*next = string(v)
	}
	return ok
}

// forged sends forged notifications at --forged-rate until ctx ends.
func (h *hostile) forged(ctx context.Context) {
	t := time.NewTicker(time.Duration(float64(time.Second) / h.o.ForgedRate))
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wg.Go(func() { h.forge(ctx, n) })
	}
}

func (h *hostile) forge(ctx context.Context, n int) {
	id := fmt.Sprintf("msg_forged_%d_%d", time.Now().UnixNano(), n)
	body := fmt.Sprintf(`{"type":"payment.captured","timestamp":%q,"data":{"payment_id":"pay_forged_%d","capture_id":"cap_forged_%d","amount":100000,"currency":"USD"}}`,
		time.Now().UTC().Format(time.RFC3339), n, n)
	var req *http.Request
	kind := ""
	switch n % 3 {
	case 0:
		kind = "forged-standard"
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, h.o.URL+"/webhooks/standard", strings.NewReader(body))
		req.Header.Set("Webhook-Id", id)
		req.Header.Set("Webhook-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		req.Header.Set("Webhook-Signature", "v1,bm90IGEgc2lnbmF0dXJlIG9mIHRoaXMgYm9keSBhdCBhbGwhISE=")
		req.Header.Set("Content-Type", "application/json")
	case 1:
		kind = "forged-stripe"
		sb := fmt.Sprintf(`{"id":"evt_forged_%d","object":"event","type":"charge.succeeded","created":%d,"data":{"object":{"id":"ch_forged_%d","object":"charge","amount":100000,"currency":"usd","captured":true,"payment_intent":"pi_forged_%d"}}}`,
			n, time.Now().Unix(), n, n)
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, h.o.URL+"/webhooks/stripe", strings.NewReader(sb))
		req.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%064x", time.Now().Unix(), n))
		req.Header.Set("Content-Type", "application/json")
	default:
		kind = "forged-alipay"
		form := url.Values{"notify_id": {id}, "trade_no": {fmt.Sprint("2026", n)}, "out_trade_no": {fmt.Sprint("forged", n)},
			"trade_status": {"TRADE_SUCCESS"}, "total_amount": {"1000.00"}, "app_id": {"2021000000000001"},
			"sign_type": {"RSA2"}, "sign": {"Zm9yZ2Vk"}, "subject": {"A&B=C"}}
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, h.o.URL+"/webhooks/alipay", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	h.send(kind, req)
}

// send does req and counts its answer.
func (h *hostile) send(kind string, req *http.Request) {
	start := time.Now()
	resp, err := h.client.Do(req)
	if err != nil {
		if req.Context().Err() == nil {
			h.tally.add(kind, "transport error")
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	h.tally.add(kind, strconv.Itoa(resp.StatusCode))
	h.tally.observe(kind, time.Since(start))
}

// bombs uploads both bombs every --bomb-every until ctx ends.
func (h *hostile) bombs(ctx context.Context) {
	for pause(ctx, h.o.BombEvery) {
		for _, b := range []struct {
			kind, provider, ctype string
			body                  []byte
		}{
			{"gzip-bomb", "wechatpay", "application/gzip", h.gzipBomb},
			{"zip-bomb", "alipay", "application/zip", h.zipBomb},
		} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.o.URL+"/v1/settlements/"+b.provider, bytes.NewReader(b.body))
			req.Header.Set("Content-Type", b.ctype)
			if h.o.AdminToken != "" {
				req.Header.Set("Authorization", "Bearer "+h.o.AdminToken)
			}
			h.send(b.kind, req)
		}
	}
}

// slow holds one slow upload at a time until ctx ends: a settlement
// upload (admin token) or a webhook body, announced and sent a byte at a
// time.
func (h *hostile) slow(ctx context.Context, settlement bool) {
	kind, head := "slow-webhook", fmt.Sprintf("POST /webhooks/standard HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Webhook-Id: msg_slow\r\nWebhook-Timestamp: %d\r\nWebhook-Signature: v1,c2xvdw==\r\nContent-Length: 100000\r\n\r\n",
		h.host, time.Now().Unix())
	if settlement {
		kind, head = "slow-settlement", fmt.Sprintf("POST /v1/settlements/stripe HTTP/1.1\r\nHost: %s\r\nContent-Type: text/csv\r\n"+
			"Authorization: Bearer %s\r\nContent-Length: 10000000\r\n\r\n", h.host, h.o.AdminToken)
	}
	for ctx.Err() == nil {
		c, err := h.dialer.DialContext(ctx, "tcp", h.host)
		if err != nil {
			h.tally.add(kind, "dial error")
			pause(ctx, time.Second)
			continue
		}
		started := time.Now()
		answered := make(chan string, 1)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answered <- "closed unanswered"
				return
			}
			_ = resp.Body.Close()
			answered <- strconv.Itoa(resp.StatusCode)
		}()
		_, err = io.WriteString(c, head)
		outcome := ""
	trickle:
		for err == nil {
			select {
			case <-ctx.Done():
				break trickle
			case outcome = <-answered:
				break trickle
			case <-time.After(h.o.SlowEvery):
				_, err = c.Write([]byte("a"))
			}
		}
		_ = c.Close()
		if outcome == "" {
			outcome = <-answered
		}
		if ctx.Err() == nil {
			h.tally.add(kind, outcome)
			h.tally.observe(kind+" held", time.Since(started))
		} else {
			h.tally.add(kind, "still held at the end")
		}
		pause(ctx, 100*time.Millisecond)
	}
}

// gzipBomb is a WeChat Pay bill gzip that inflates to mib MiB in one line.
func gzipBomb(mib int) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	if _, err := zw.Write([]byte("\ufeff交易时间,")); err != nil {
		return nil, err
	}
	for range mib {
		if _, err := zw.Write(chunk); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipBomb is an Alipay bill zip of n empty entries.
func zipBomb(n int) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: strconv.Itoa(i), Method: zip.Store}); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tally counts answers by kind and outcome, and times by kind.
type tally struct {
	mu     sync.Mutex
	counts map[string]map[string]int64
	times  map[string][]time.Duration
}

func newTally() *tally {
	return &tally{counts: map[string]map[string]int64{}, times: map[string][]time.Duration{}}
}

func (t *tally) add(kind, outcome string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts[kind] == nil {
		t.counts[kind] = map[string]int64{}
	}
	t.counts[kind][outcome]++
}

// observe keeps durations (at most 100,000 per kind: a soak's worth at
// the default rates).
func (t *tally) observe(kind string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.times[kind]) < 100_000 {
		t.times[kind] = append(t.times[kind], d)
	}
}

func (t *tally) print(w io.Writer, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(w, "hostile: ran %s\n", took.Round(time.Second))
	kinds := make([]string, 0, len(t.counts))
	for k := range t.counts {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		outs := make([]string, 0, len(t.counts[k]))
		for o, n := range t.counts[k] {
			outs = append(outs, fmt.Sprintf("%s %d", o, n))
		}
		slices.Sort(outs)
		fmt.Fprintf(w, "hostile %-16s %s\n", k+":", strings.Join(outs, ", "))
	}
	timed := make([]string, 0, len(t.times))
	for k := range t.times {
		timed = append(timed, k)
	}
	slices.Sort(timed)
	for _, k := range timed {
		ds := slices.Clone(t.times[k])
		slices.Sort(ds)
		q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
		fmt.Fprintf(w, "hostile %-22s n %d  p50 %s  p99 %s  max %s\n", k+" time:", len(ds),
			q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
}
