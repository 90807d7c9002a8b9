package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
	"github.com/agencysync/agencysync/internal/testkit/patience"
)

func TestHelpListsEveryFlag(t *testing.T) {
	var out childproc.Buffer
	if code := run(context.Background(), []string{"--help"}, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := out.String()
	for _, f := range []string{"api-addr", "comms-addr", "seed", "brands", "projects-per-brand", "users", "emails",
		"history-days", "start", "domain-id", "api-key", "comms-key", "foreign-key", "revoked-key", "admin-token",
		"variant", "rate", "daily-quota", "quota-tz", "max-per-page", "limits-scope", "no-limits", "fault-500",
		"fault-502-html", "fault-503", "fault-truncate", "fault-slow", "slow-delay", "fault-drop", "fault-429",
		"latency", "jitter", "bad-record-rate", "log-format", "log-level"} {
		if !strings.Contains(help, "  -"+f+" ") && !strings.Contains(help, "  -"+f+"\n") {
			t.Errorf("--help lacks -%s", f)
		}
	}
	for _, v := range []string{"bare-array", "recipients-array", "empty-rows-array", "ignore-updated-since",
		"renamed-fields", "php-false", "php-strings", "php-empty-array", "php-paginator", "php-resource", "php-422", "php "} {
		if !strings.Contains(help, v) {
			t.Errorf("--help lacks variant %s", v)
		}
	}
}

func TestBadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"}, {"--rate", "fast"}, {"--start", "yesterday"}, {"--quota-tz", "Mars/Olympus"},
		{"--variant", "sideways"}, {"--limits-scope", "global"}, {"--fault-500", "2"}, {"--log-format", "xml"},
		{"extra-argument"}, {"--brands", "0"}, {"--variant", "php", "--variant", "meta-paging"},
	} {
		var out childproc.Buffer
		if code := run(context.Background(), args, &out); code != 2 {
			t.Errorf("%v: exit %d (%s)", args, code, out.String())
		}
	}
}

func TestServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out childproc.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--api-addr", "127.0.0.1:0", "--comms-addr", "127.0.0.1:0", "--emails", "500",
			"--brands", "3", "--users", "20", "--api-key", "k1", "--log-format", "json", "--variant", "numeric-ids"}, &out)
	}()
	re := regexp.MustCompile(`"api_url":"(http://[^"]+)".*"communications_url":"(http://[^"]+)"`)
	var m []string
	deadline := time.Now().Add(20 * time.Second)
	for m == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line in %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
		m = re.FindStringSubmatch(out.String())
	}
	if n := strings.Count(out.String(), "listening"); n != 1 {
		t.Fatalf("%d listening lines: %s", n, out.String())
	}
	req, _ := http.NewRequest(http.MethodGet, m[1]+"/v1/brands", nil)
	req.Header.Set("Authorization", "wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || string(body) != `{"error":{"message":"Invalid authentication","details":["The API key provided is invalid"]}}` {
		t.Fatalf("wrong key: %d %s", resp.StatusCode, body)
	}
	req, _ = http.NewRequest(http.MethodPost, m[2], strings.NewReader(`{"user_id":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}`))
	req.Header.Set("X-Workflow-Key", "sandbox-comms-key")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"total":500,`) {
		t.Fatalf("communications: %d %.200s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-patience.After(t):
		t.Fatal("did not stop before the test's deadline")
	}
}

func TestListenFailureExit1(t *testing.T) {
	var out childproc.Buffer
	if code := run(context.Background(), []string{"--api-addr", "256.0.0.1:1", "--comms-addr", "127.0.0.1:0"}, &out); code != 1 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
}
