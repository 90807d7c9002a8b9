package extract

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestListNotFoundNamesItsAddress: a list whose own address answers 404
// fails naming the path it asked and the settings that make it
// (AGENCY_BASE_URL, AGENCY_PATHS), still matching ErrNotFound; a list
// asked per entity that answers 404 (the entity is gone) is not blamed on
// the address.
func TestListNotFoundNamesItsAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"Data not found","details":["The requested data does not exist."]}}`))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, fastOptions(srv.URL, srv.URL))
	var err error
	for _, e := range c.List(context.Background(), "brands", ListQuery{}) {
		err = e
	}
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "/v1/brands") || !strings.Contains(err.Error(), "AGENCY_PATHS=brands=") {
		t.Errorf("list brands at a wrong address: %v; want ErrNotFound naming /v1/brands and AGENCY_PATHS=brands=", err)
	}
	for _, e := range c.List(context.Background(), "brand_contacts", ListQuery{ID: "7"}) {
		err = e
	}
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "AGENCY_PATHS") {
		t.Errorf("the contacts of a brand gone: %v; want ErrNotFound, not blamed on the address", err)
	}
}

// TestValidationOfThePageSizeNamesTheSetting: a 422 refusing the page size
// (per_page on the communications endpoint, limit on a list) says which
// setting gives a size the server accepts; one refusing another field does
// not.
func TestValidationOfThePageSizeNamesTheSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		endpoint, field string
		hint            bool
	}{
		{"communications", "per_page", true},
		{"brands", "limit", true},
		{"communications", "user_id", false},
	} {
		e := &APIError{Endpoint: c.endpoint, Status: 422, Kind: ErrValidation, Message: "The given data was invalid.",
			Fields: []FieldError{{Field: c.field, Messages: []string{"The " + c.field + " may not be greater than 500."}}}}
		got := e.Error()
		if want := "AGENCY_PAGING=" + c.endpoint + "=…:max=N"; strings.Contains(got, want) != c.hint {
			t.Errorf("%s refusing %s: %q; naming %s: %v, want %v", c.endpoint, c.field, got, want, !c.hint, c.hint)
		}
	}
}
