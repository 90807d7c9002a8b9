package extract_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// fakeService is a tiny stand-in for the service: two pages of brands and a
// communications page.
func fakeService() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/brands", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "secret-key" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Invalid authentication","details":["The API key provided is invalid"]}}`)
			return
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		fmt.Fprintf(w, `{"data":[{"brand_info":{"id":"%d","name":"Brand %d","financial_summary":{"total_budget":1250.50,"invoiced":"300","collected":0,"currency":"EUR"}}}],
			"total":2,"per_page":1,"current_page":%d,"last_page":2}`, page, page, page)
	})
	mux.HandleFunc("POST /workflow/tools/communications-emails", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, `{"data":{"rows":{"1001":{"email":{"subject":"Kick-off","has_attachments":1,"email_at":"2024-03-01T10:15:30.123456Z"},
			"users":{"from":[{"first_name":"Ana","full_name":"Ana Pop","email":"ana@agency.example"}],
			         "to":{"7":{"first_name":"Dan","full_name":"Dan Ionescu","email":"dan@agency.example"}},"cc":[],"bcc":[]}},
			"1002":{"email":{"subject":null},"users":{"from":"nobody"}},"1003":"deleted"},
			"total":2,"per_page":1000,"current_page":1,"last_page":1}}`)
	})
	return httptest.NewServer(mux)
}

// List a declared list (the brands) page by page.
func ExampleClient_List() {
	srv := fakeService()
	defer srv.Close()
	c, err := extract.New(extract.Options{BaseURL: srv.URL, APIKey: "secret-key"})
	if err != nil {
		panic(err)
	}
	for page, err := range c.List(context.Background(), stream.EndpointBrands, extract.ListQuery{}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, b := range page.Records {
			info := gjson.GetBytes(b.Raw, "brand_info")
			fmt.Printf("page %d/%d: brand %s %q budget %s %s\n", page.Number, page.LastPage, info.Get("id").Str, info.Get("name").Str,
				info.Get("financial_summary.total_budget").Raw, info.Get("financial_summary.currency").Str)
		}
	}
	// Output:
	// page 1/2: brand 1 "Brand 1" budget 1250.50 EUR
	// page 2/2: brand 2 "Brand 2" budget 1250.50 EUR
}

// Read communications: each record comes as received, keyed by its record
// id; a row that is not a record is set aside with its raw bytes while the
// rest of the page proceeds.
func ExampleClient_Communications() {
	srv := fakeService()
	defer srv.Close()
	c, err := extract.New(extract.Options{CommsURL: srv.URL, CommsKey: "comms-key", WorkflowID: "agencysync"})
	if err != nil {
		panic(err)
	}
	q := extract.CommsQuery{UserIDs: []int64{7}}
	for page, err := range c.WithExecutionID("run-1").Communications(context.Background(), q) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, r := range page.Records {
			fmt.Printf("%s subject=%s at=%q from=%q\n", r.Key, gjson.GetBytes(r.Raw, "email.subject").Raw,
				gjson.GetBytes(r.Raw, "email.email_at").Str, gjson.GetBytes(r.Raw, "users.from.0.email").Str)
		}
		for _, rej := range page.Rejects {
			fmt.Printf("rejected %s: %v\n", rej.Key, rej.Err)
		}
	}
	// Output:
	// 1001 subject="Kick-off" at="2024-03-01T10:15:30.123456Z" from="ana@agency.example"
	// 1002 subject=null at="" from=""
	// rejected 1003: record: want an object, got string
}

// Branch on typed errors; the key never appears in them.
func ExampleAPIError() {
	srv := fakeService()
	defer srv.Close()
	c, err := extract.New(extract.Options{BaseURL: srv.URL, APIKey: "wrong-key", MaxAttempts: 1})
	if err != nil {
		panic(err)
	}
	for _, err := range c.List(context.Background(), stream.EndpointBrands, extract.ListQuery{}) {
		var ae *extract.APIError
		if errors.Is(err, extract.ErrUnauthorized) && errors.As(err, &ae) {
			fmt.Println("status", ae.Status, "-", ae.Message)
			fmt.Println(err)
		}
	}
	// Output:
	// status 401 - Invalid authentication
	// fetch brands page 1: unauthorized: HTTP 401 "Invalid authentication" (The API key provided is invalid): the API key was refused; check the API token under "My Account" in the platform, or regenerate it there and configure the new one (regenerating revokes the old key at once)
}

// Stop before the quota does: a client with a budget refuses to send past it.
func ExampleClient_WithBudget() {
	srv := fakeService()
	defer srv.Close()
	c, err := extract.New(extract.Options{BaseURL: srv.URL, APIKey: "secret-key"})
	if err != nil {
		panic(err)
	}
	budget := extract.NewBudget(1)
	for page, err := range c.WithBudget(budget).List(context.Background(), stream.EndpointBrands, extract.ListQuery{}) {
		if errors.Is(err, extract.ErrBudgetExhausted) {
			fmt.Println(err)
			break
		}
		fmt.Println("got page", page.Number)
	}
	fmt.Println("spent", budget.Spent(), "remaining", budget.Remaining())
	// Output:
	// got page 1
	// fetch brands page 2: request budget exhausted
	// spent 1 remaining 0
}

// Split a body fetched some other way.
func ExampleSplitPage() {
	body := []byte(`{"data":[{"id":42,"amount":"1.50e3","currency":"RON"},null],"meta":{"current_page":"1","last_page":"3","per_page":2,"total":5}}`)
	page, err := extract.SplitPage(body)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(page.Records[0].Raw))
	fmt.Println(page.Number, page.LastPage, page.PerPage, page.Total, page.Rejects[0].Key, page.Rejects[0].Err)
	// Output:
	// {"id":42,"amount":"1.50e3","currency":"RON"}
	// 1 3 2 5 #1 record: want an object, got null
}
