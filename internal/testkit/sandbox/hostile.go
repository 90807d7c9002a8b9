package sandbox

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/ianaindex"
)

// HostileTwists are departures of a server that is hostile in what it
// sends, switched through POST /_sandbox/twists like the other twists (the
// key names are a contract; absent keys keep their value).
type HostileTwists struct {
	// RefuseMainKey answers 401 to every request of the main interface,
	// whatever its key, while the communications key still works.
	RefuseMainKey *bool `json:"refuse_main_key,omitempty"`
	// GzipBomb answers every communications page with a gzip body
	// (Content-Encoding: gzip) that inflates to GzipBombBytes of a JSON
	// start followed by spaces: a few kilobytes on the wire per gigabyte.
	GzipBomb *bool `json:"gzip_bomb,omitempty"`
	// GzipBombBytes is the inflated size of a bomb (default and 0: 1 GiB).
	GzipBombBytes *int64 `json:"gzip_bomb_bytes,omitempty"`
	// EndlessBody answers every communications page with a plain body
	// (chunked, no length) that never ends: a JSON start, then spaces until
	// the client hangs up.
	EndlessBody *bool `json:"endless_body,omitempty"`
	// OversizeFromPage limits GzipBomb and EndlessBody to the pages from
	// this one on (the page number the answer would carry, current_page):
	// 2 lets the first page of a range through, so that a client fetching
	// pages ahead meets several bombs at once. 0 and 1: every page.
	OversizeFromPage *int `json:"oversize_from_page,omitempty"`
	// Charset re-encodes every successful data answer of both interfaces
	// from UTF-8 into this single-byte charset (an IANA name, e.g.
	// ISO-8859-1, windows-1250, ISO-8859-16); a character it lacks becomes
	// '?', as a server's iconv would write it. "" is UTF-8.
	Charset *string `json:"charset,omitempty"`
	// CharsetUndeclared leaves the charset out of Content-Type (a bare
	// "text/plain" or "application/json"); by default it is declared.
	CharsetUndeclared *bool `json:"charset_undeclared,omitempty"`
	// EchoKeyInRecords makes every brand detail and the first
	// echoRowsPerPage e-mails of every communications page carry the key
	// of their request in every form of EchoForms, under "echo".
	EchoKeyInRecords *bool `json:"echo_key_in_records,omitempty"`
}

// HostileStatus is the hostile twists in effect, in TwistsStatus.
type HostileStatus struct {
	RefuseMainKey     bool   `json:"refuse_main_key"`
	GzipBomb          bool   `json:"gzip_bomb"`
	GzipBombBytes     int64  `json:"gzip_bomb_bytes"`
	EndlessBody       bool   `json:"endless_body"`
	OversizeFromPage  int    `json:"oversize_from_page"`
	Charset           string `json:"charset"`
	CharsetUndeclared bool   `json:"charset_undeclared"`
	EchoKeyInRecords  bool   `json:"echo_key_in_records"`
}

// hostileState is the hostile twists' run-time state (in twistState,
// guarded by Server.faultMu).
type hostileState struct {
	refuseMainKey bool
	gzipBomb      bool
	bombBytes     int64
	endless       bool
	fromPage      int
	charset       string
	cm            *charmap.Charmap // charset's table; nil for UTF-8
	undeclared    bool
	echoKey       bool
}

// defaultBombBytes is a gzip bomb's inflated size unless set.
const defaultBombBytes = 1 << 30

// echoRowsPerPage is how many e-mails of a page echo the key.
const echoRowsPerPage = 3

// status is the state as TwistsStatus reports it.
func (h hostileState) status() HostileStatus {
	return HostileStatus{RefuseMainKey: h.refuseMainKey, GzipBomb: h.gzipBomb, GzipBombBytes: h.bombSize(),
		EndlessBody: h.endless, OversizeFromPage: h.fromPage, Charset: h.charset, CharsetUndeclared: h.undeclared, EchoKeyInRecords: h.echoKey}
}

func (h hostileState) bombSize() int64 {
	if h.bombBytes <= 0 {
		return defaultBombBytes
	}
	return h.bombBytes
}

// set applies the twists t sets (checked first: nothing changes on an
// invalid value).
func (h *hostileState) set(t HostileTwists) error {
	var cm *charmap.Charmap
	if t.Charset != nil && *t.Charset != "" {
		var err error
		if cm, err = singleByteCharset(*t.Charset); err != nil {
			return err
		}
	}
	if t.GzipBombBytes != nil && *t.GzipBombBytes < 0 {
		return invalid("gzip_bomb_bytes must not be negative, got %d", *t.GzipBombBytes)
	}
	if t.OversizeFromPage != nil && *t.OversizeFromPage < 0 {
		return invalid("oversize_from_page must not be negative, got %d", *t.OversizeFromPage)
	}
	for _, b := range []struct {
		v   *bool
		dst *bool
	}{{t.RefuseMainKey, &h.refuseMainKey}, {t.GzipBomb, &h.gzipBomb}, {t.EndlessBody, &h.endless},
		{t.CharsetUndeclared, &h.undeclared}, {t.EchoKeyInRecords, &h.echoKey}} {
		if b.v != nil {
			*b.dst = *b.v
		}
	}
	if t.GzipBombBytes != nil {
		h.bombBytes = *t.GzipBombBytes
	}
	if t.OversizeFromPage != nil {
		h.fromPage = *t.OversizeFromPage
	}
	if t.Charset != nil {
		h.charset, h.cm = *t.Charset, cm
	}
	return nil
}

// singleByteCharset is the table of an IANA charset name the charset twist
// can write: a single-byte charset (ISO-8859-x, windows-125x, KOI8-x, ...).
func singleByteCharset(name string) (*charmap.Charmap, error) {
	enc, err := ianaindex.IANA.Encoding(name)
	if err != nil || enc == nil {
		return nil, invalid("charset %q is not an IANA charset name this sandbox knows", name)
	}
	cm, ok := enc.(*charmap.Charmap)
	if !ok {
		return nil, invalid("charset %q is not a single-byte charset", name)
	}
	return cm, nil
}

// EchoForms are the forms in which the echo_key_in_records twist echoes a
// key, by name, each as the text of a JSON string (already escaped): raw;
// URL-encoded; with PHP's escaped slashes; every character \u-escaped;
// base64 in both alphabets, with and without padding, of the key alone and
// at the other two alignments (inside "u:" + key and a basic-auth header's
// "agency:" + key); hex in both cases.
func EchoForms(key string) map[string]string {
	std, url64 := base64.StdEncoding, base64.URLEncoding
	raw := func(e *base64.Encoding) *base64.Encoding { return e.WithPadding(base64.NoPadding) }
	var u strings.Builder
	for _, c := range []byte(key) {
		u.WriteString(`\u00` + hex.EncodeToString([]byte{c}))
	}
	quoted := func(s string) string {
		b := appendJSONString(nil, s)
		return string(b[1 : len(b)-1])
	}
	return map[string]string{
		"raw":           quoted(key),
		"url":           quoted(url.QueryEscape(key)),
		"php_slashes":   strings.ReplaceAll(quoted(key), "/", `\/`),
		"u_escaped":     u.String(),
		"base64":        std.EncodeToString([]byte(key)),
		"base64_raw":    raw(std).EncodeToString([]byte(key)),
		"base64url":     url64.EncodeToString([]byte(key)),
		"base64url_raw": raw(url64).EncodeToString([]byte(key)),
		"base64_at_2":   std.EncodeToString([]byte("u:" + key)),
		"basic_auth":    "Basic " + std.EncodeToString([]byte("agency:"+key)),
		"base64_php":    strings.ReplaceAll(std.EncodeToString([]byte("agency:"+key)), "/", `\/`),
		"hex":           hex.EncodeToString([]byte(key)),
		"hex_upper":     strings.ToUpper(hex.EncodeToString([]byte(key))),
	}
}

// echoObject is `"echo":{...}` with every form of key, ending in a comma,
// to insert at the start of an object.
func echoObject(key string) []byte {
	forms := EchoForms(key)
	names := make([]string, 0, len(forms))
	for n := range forms {
		names = append(names, n)
	}
	sortStrings(names)
	b := []byte(`"echo":{`)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"`+n+`":"`+forms[n]+`"`...)
	}
	return append(b, "},"...)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// hostileTwists returns the hostile twists in effect.
func (s *Server) hostileTwists() hostileState { return s.twists().hostile }

// writeAnswer writes an answer of a data listener: as it is, or as the
// hostile twists in effect change a successful one.
func (s *Server) writeAnswer(w http.ResponseWriter, r *http.Request, endpoint string, status int, contentType string, body []byte) {
	h := s.hostileTwists()
	if status < 200 || status >= 300 || endpoint == "unknown" {
		writeBody(w, status, contentType, body)
		return
	}
	comms := endpoint == "communications" && (h.fromPage <= 1 || answeredPage(body) >= h.fromPage)
	switch {
	case comms && h.gzipBomb:
		writeGzipBomb(w, r, contentType, h.bombSize())
		return
	case comms && h.endless:
		writeEndless(w, r, contentType)
		return
	}
	if h.echoKey {
		body = echoInRecords(body, r, endpoint)
	}
	if h.cm != nil {
		body = transcode(h.cm, body)
		contentType = withCharset(contentType, h.charset, h.undeclared)
	}
	writeBody(w, status, contentType, body)
}

// answeredPage is the current_page a communications answer carries (0 when
// it carries none).
func answeredPage(body []byte) int {
	for _, path := range []string{"data.current_page", "current_page", "data.meta.current_page", "meta.current_page"} {
		if p := gjson.GetBytes(body, path); p.Exists() {
			return int(p.Int())
		}
	}
	return 0
}

// echoInRecords inserts the request's key in every form at the start of a
// brand detail's record, or of the email object of a page's first
// echoRowsPerPage e-mails.
func echoInRecords(body []byte, r *http.Request, endpoint string) []byte {
	key := r.Header.Get("X-Workflow-Key")
	if key == "" {
		key = r.Header.Get("Authorization")
	}
	var at []int // offsets of the '{' of each object to echo in, ascending
	switch endpoint {
	case epBrandDetail:
		if d := gjson.GetBytes(body, "data"); d.IsObject() && d.Index > 0 {
			at = append(at, d.Index)
		} else if len(body) > 0 && body[0] == '{' {
			at = append(at, 0)
		}
	case "communications":
		rows := gjson.GetBytes(body, "data.rows")
		var keys []string
		rows.ForEach(func(k, _ gjson.Result) bool {
			keys = append(keys, k.String())
			return len(keys) < echoRowsPerPage
		})
		for i, k := range keys {
			path := "data.rows." + gjsonEscape(k) + ".email"
			if rows.IsArray() {
				path = "data.rows." + strconv.Itoa(i) + ".email"
			}
			if e := gjson.GetBytes(body, path); e.IsObject() && e.Index > 0 {
				at = append(at, e.Index)
			}
		}
	}
	if len(at) == 0 {
		return body
	}
	ins := echoObject(key)
	out := make([]byte, 0, len(body)+len(at)*len(ins))
	prev := 0
	for _, i := range at {
		out = append(out, body[prev:i+1]...)
		if i+1 < len(body) && body[i+1] == '}' {
			out = append(out, ins[:len(ins)-1]...) // an empty object: no comma
		} else {
			out = append(out, ins...)
		}
		prev = i + 1
	}
	return append(out, body[prev:]...)
}

// gjsonEscape escapes the characters of a gjson path component.
func gjsonEscape(k string) string {
	var b strings.Builder
	for _, c := range k {
		if strings.ContainsRune(`.*?|#@\!=<>%`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// transcode re-encodes UTF-8 body into cm, '?' for what cm lacks.
func transcode(cm *charmap.Charmap, body []byte) []byte {
	out := make([]byte, 0, len(body))
	for _, c := range string(body) {
		if c < 0x80 {
			out = append(out, byte(c))
			continue
		}
		b, ok := cm.EncodeRune(c)
		if !ok {
			b = '?'
		}
		out = append(out, b)
	}
	return out
}

// withCharset is contentType with its charset parameter set to charset, or
// without one when undeclared.
func withCharset(contentType, charset string, undeclared bool) string {
	mt, _, _ := strings.Cut(contentType, ";")
	if undeclared {
		return mt
	}
	return mt + "; charset=" + charset
}

// bombStart is the JSON a bomb or an endless body starts with.
const bombStart = `{"data":{"rows":{`

// spaceMember is one gzip member inflating to spaceChunk spaces; a bomb is
// the start's member followed by as many of these as its size needs (gzip
// readers read concatenated members as one stream).
var spaceMember = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(bytes.Repeat([]byte{' '}, spaceChunk))
	_ = zw.Close()
	return b.Bytes()
})

const spaceChunk = 1 << 20

// writeGzipBomb answers with a gzip body inflating to size bytes, until
// the client hangs up.
func writeGzipBomb(w http.ResponseWriter, r *http.Request, contentType string, size int64) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	var start bytes.Buffer
	zw := gzip.NewWriter(&start)
	_, _ = zw.Write([]byte(bombStart))
	_ = zw.Close()
	if _, err := w.Write(start.Bytes()); err != nil {
		return
	}
	m := spaceMember()
	for n := int64(len(bombStart)); n < size && r.Context().Err() == nil; n += spaceChunk {
		if _, err := w.Write(m); err != nil {
			return
		}
	}
}

// writeEndless answers with a body that never ends, until the client hangs
// up.
func writeEndless(w http.ResponseWriter, r *http.Request, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte(bombStart)); err != nil {
		return
	}
	spaces := bytes.Repeat([]byte{' '}, 64<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(spaces); err != nil {
			return
		}
	}
}
