package extract

import (
	"encoding/json"
	"errors"
	"testing"
)

// oddShapes seed the fuzzers with every shape the decoders know, and broken
// ones.
var oddShapes = []string{
	commsCanonical,
	`{"data":{"rows":[],"total":0,"per_page":20,"current_page":1,"last_page":0}}`,
	`{"data":{"rows":{},"total":0}}`,
	`{"data":{"rows":[{"id":5,"email":{"has_attachments":true},"users":{"from":{"1":{"email":"a@b"}},"to":[{"email":"c@d"}],"cc":{},"bcc":null}}]}}`,
	`{"data":{"rows":{"1":{"email":{"email_at":"2024-03-01T10:15:30.123456Z","size":"12"},"users":{"to":{"ana@x.example":{"email":"ana@x.example"}}}}}}}`,
	`{"data":{"rows":{"99999999999999999999":{"email":{},"users":{}}}}}`,
	`{"data":{"rows":{"1":{"email":{},"users":{"to":{"99999999999999999999":{}}}}}}}`,
	`[{"brand_info":{"id":"1","financial_summary":{"total_budget":"1e3"}}}]`,
	`{"data":[{"id":1}],"meta":{"pagination":{"total":"3","per_page":1,"current_page":1}}}`,
	`{"data":[{"id":1}],"pagination":{"total":3,"last_page":3}}`,
	`{"data":{"1":{"project_info":{"id":1,"team":{"5":{"role":"x"}},"history":[{"from":{"a":1},"to":[1]}]}}}}`,
	`{"data":{}}`, `{}`, `[]`, `null`, `"x"`, `42`, ``, ` `, `<html>`, `{"error":{"message":"Daily quota exceeded"}}`,
	`{"error":"x","data":[]}`, `{"data":{"rows":"x"}}`, `{"data":{"items":[]}}`,
	`[{"id":1.5},{"id":true},{"id":{}},{"id":[]},{"amount":"1,5"},{"amount":"-"},null,1,"s",[]]`,
	`[{"name":"\u00e9\ud83d\ude00\ud800\"\\\/\b\f\n\r\t"}]`,
	"\xEF\xBB\xBF[{\"id\":\"1\"}]",
	`{"data":[{"id":1},`, `{"data":{"rows":{"1":{"email":{"subject":"x`, `[1,]`, `[01]`, `[-]`, `[1e]`, `["\x"]`, `["\u12"]`,
	`{"data":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`[{"date_created":"2024-02-30","projects_count":"9223372036854775808"}]`,
	`[{"brand_info":{"brand_info":{"brand_info":{"brand_info":{"brand_info":{"id":1}}}}}}]`,
}

// checkPage checks invariants every decoded page must hold.
func checkPage[T any](t *testing.T, p *Page[T], err error, raws func(*Page[T]) [][]byte) {
	if err != nil {
		if !errors.Is(err, ErrMalformedResponse) && !errors.Is(err, ErrUnexpectedShape) && !errors.Is(err, ErrErrorResponse) &&
			!errors.Is(err, ErrDailyQuota) && !errors.Is(err, ErrRateLimited) && !errors.Is(err, ErrUnauthorized) &&
			!errors.Is(err, ErrForbidden) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrServer) {
			t.Fatalf("untyped error %v", err)
		}
		if p != nil {
			t.Fatal("page with an error")
		}
		return
	}
	for _, raw := range raws(p) {
		if !json.Valid(raw) {
			t.Fatalf("record raw is not JSON: %q", raw)
		}
	}
	for _, r := range p.Rejects {
		if !json.Valid(r.Raw) || r.Err == nil || !errors.Is(&r, ErrInvalidRecord) {
			t.Fatalf("reject %+v", r)
		}
	}
}

func FuzzDecodeCommunicationsPage(f *testing.F) {
	for _, s := range oddShapes {
		f.Add([]byte(s))
	}
	f.Add(genCommsPage(3, 1, 1, 3, 3))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodeCommunications(body)
		checkPage(t, p, err, func(p *Page[Communication]) [][]byte {
			var out [][]byte
			for _, r := range p.Records {
				out = append(out, r.Raw)
			}
			return out
		})
		if err == nil && !json.Valid(body[min(len(body), 3*boolInt(len(body) >= 3 && body[0] == 0xEF)):]) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func FuzzDecodeList(f *testing.F) {
	for _, s := range oddShapes {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pb, err := DecodeList[Brand](body)
		checkPage(t, pb, err, func(p *Page[Brand]) [][]byte {
			var out [][]byte
			for _, r := range p.Records {
				out = append(out, r.Raw)
			}
			return out
		})
		pp, err := DecodeList[Project](body)
		checkPage(t, pp, err, func(p *Page[Project]) [][]byte {
			var out [][]byte
			for _, r := range p.Records {
				out = append(out, r.Raw)
			}
			return out
		})
		pi, err := DecodeList[Invoice](body)
		checkPage(t, pi, err, func(p *Page[Invoice]) [][]byte {
			var out [][]byte
			for _, r := range p.Records {
				out = append(out, r.Raw)
			}
			return out
		})
	})
}

func FuzzDecodeDetail(f *testing.F) {
	for _, s := range oddShapes {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"brand_info":{"id":"3"},"general_info":{},"metadata":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if bd, err := DecodeBrandDetail(body); err == nil && (bd.Brand.ID == "" || !json.Valid(bd.Raw)) {
			t.Fatalf("brand detail %+v", bd)
		}
		if p, err := DecodeProject(body); err == nil && (p.ID == "" || !json.Valid(p.Raw)) {
			t.Fatalf("project %+v", p)
		}
	})
}

func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0.00", "1e3", "1.50E-2", "+7", ".5", "5.", "1e1001", "--1", "1,5", " 12 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseDecimal([]byte(s))
		if !ok {
			return
		}
		// The canonical form is a plain decimal that parses to itself.
		again, ok := parseDecimal([]byte(d))
		if !ok || again != d {
			t.Fatalf("%q -> %q -> %q", s, d, again)
		}
		for i, c := range []byte(d) {
			if !(isDigit(c) || c == '.' || (c == '-' && i == 0)) {
				t.Fatalf("%q -> %q", s, d)
			}
		}
	})
}
