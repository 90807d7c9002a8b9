package extract

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// laravel422 is a PHP framework's answer to a bad parameter.
const laravel422 = `{"message":"The updated since does not match the format Y-m-d. (and 1 more error)","errors":{"updated_since":["The updated since does not match the format Y-m-d."],"per_page":["The per page may not be greater than 500.","The per page must be an integer."]}}`

// TestValidationErrorNamesTheFieldNeverRetried: 422 Unprocessable Entity
// with {"message", "errors": {field: [...]}} is a client error
// (ErrValidation) that names each refused field with its messages, in the
// order received, and is sent once: a retry would be refused alike.
func TestValidationErrorNamesTheFieldNeverRetried(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		fields []FieldError
		text   []string
	}{
		{"laravel", laravel422, []FieldError{
			{Field: "updated_since", Messages: []string{"The updated since does not match the format Y-m-d."}},
			{Field: "per_page", Messages: []string{"The per page may not be greater than 500.", "The per page must be an integer."}},
		}, []string{`HTTP 422 "The updated since does not match the format Y-m-d. (and 1 more error)"`,
			"updated_since: The updated since does not match the format Y-m-d.",
			"per_page: The per page may not be greater than 500.; The per page must be an integer."}},
		{"one message a field", `{"message":"Invalid.","errors":{"level":"The selected level is invalid."}}`,
			[]FieldError{{Field: "level", Messages: []string{"The selected level is invalid."}}},
			[]string{"level: The selected level is invalid."}},
		{"wrapped in error", `{"error":{"message":"Validation failed","errors":{"date_start":["must be a date"]}}}`,
			[]FieldError{{Field: "date_start", Messages: []string{"must be a date"}}},
			[]string{`"Validation failed"`, "date_start: must be a date"}},
		{"errors as [] (none)", `{"message":"The given data was invalid.","errors":[]}`, nil, []string{`"The given data was invalid."`}},
		{"not JSON", `<html>422</html>`, nil, []string{"HTTP 422"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, http.StatusUnprocessableEntity, c.body)
			})
			o := fastOptions(srv.URL, srv.URL)
			o.MaxAttempts = 4
			cl := newClient(t, o)
			since := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
			_, err := collect(t, cl.List(context.Background(), stream.EndpointInvoices, ListQuery{UpdatedSince: since}))
			var ae *APIError
			if !errors.Is(err, ErrValidation) || !errors.As(err, &ae) || ae.Status != 422 {
				t.Fatalf("err %v, want an *APIError of ErrValidation", err)
			}
			if errors.Is(err, ErrUnexpectedStatus) || errors.Is(err, ErrServer) || retryable(err) {
				t.Errorf("err %v is in a retried or unexpected class", err)
			}
			if n := rec.count(); n != 1 {
				t.Errorf("%d requests, want 1 (never retried)", n)
			}
			if len(ae.Fields) != len(c.fields) {
				t.Fatalf("fields %+v, want %+v", ae.Fields, c.fields)
			}
			for i, f := range c.fields {
				if ae.Fields[i].Field != f.Field || strings.Join(ae.Fields[i].Messages, "|") != strings.Join(f.Messages, "|") {
					t.Errorf("field %d: %+v, want %+v", i, ae.Fields[i], f)
				}
			}
			msg := err.Error()
			for _, want := range append(c.text, "fetch invoices page 1: validation failed") {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if errorClass(err) != "validation" {
				t.Errorf("class %q", errorClass(err))
			}
			// The communications endpoint answers it alike.
			_, err = cl.CommunicationsPage(context.Background(), CommsQuery{DomainID: 1, UserIDs: []int64{1}}, 1)
			if !errors.Is(err, ErrValidation) || rec.count() != 2 {
				t.Errorf("communications: %v after %d requests", err, rec.count())
			}
		})
	}
}

// TestValidationErrorRedacted: a field name or message echoing a key is
// redacted like every other server text.
func TestValidationErrorRedacted(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Authorization")
		writeJSON(w, 422, `{"message":"bad `+key+`","errors":{"key_`+key+`":["value `+key+` refused"]}}`)
	})
	cl := newClient(t, fastOptions(srv.URL, ""))
	_, err := collect(t, cl.List(context.Background(), stream.EndpointBrands, ListQuery{}))
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrValidation) {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), testKey) || len(ae.Fields) != 1 || strings.Contains(ae.Fields[0].Field, testKey) ||
		strings.Contains(ae.Fields[0].Messages[0], testKey) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("key not redacted: %v (%+v)", err, ae.Fields)
	}
}
