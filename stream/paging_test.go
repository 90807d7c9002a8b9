package stream

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestEveryListDeclaresItsPaging(t *testing.T) {
	t.Parallel()
	lists, fixed := Lists()
	for _, s := range All() {
		for _, ep := range s.Endpoints {
			paged := slices.Contains(lists, ep.Name) || slices.Contains(fixed, ep.Name)
			if paged == (ep.Kind() == KindDetail) || slices.Contains(fixed, ep.Name) != (ep.Kind() == KindWindow) {
				t.Errorf("%s (%s): in lists %v, in fixed %v", ep.Name, ep.Kind(), slices.Contains(lists, ep.Name), slices.Contains(fixed, ep.Name))
			}
		}
	}
	for _, name := range lists {
		ep, _ := LookupEndpoint(All(), name)
		if ep.Pagination != StyleDefaults(StylePage) {
			t.Errorf("%s pages %+v, want the canonical page/per_page up to 1000", name, ep.Pagination)
		}
	}
}

func TestApplyPaging(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    PagingOverrides
		ep   string
		want string // Pagination.String
	}{
		{"all lists offset", PagingOverrides{"*": {Style: StyleOffset, Max: 100}}, EndpointProjects, "offset:max=100"},
		{"named wins over all", PagingOverrides{"*": {Style: StyleOffset}, EndpointBrands: {Style: StyleCursor}}, EndpointBrands, "cursor"},
		{"all leaves communications alone", PagingOverrides{"*": {Style: StyleOffset}}, EndpointCommunications, "page"},
		{"renamed parameters", PagingOverrides{EndpointBudgets: {Style: StyleOffset, Size: "per_page", Offset: "start"}}, EndpointBudgets, "offset:size=per_page:offset=start"},
		{"communications page size", PagingOverrides{EndpointCommunications: {Style: StylePage, Max: 500}}, EndpointCommunications, "page:max=500"},
		{"same style keeps max", PagingOverrides{EndpointBrands: {Style: StylePage, Size: "limit"}}, EndpointBrands, "page:size=limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := ApplyPaging(All(), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			ep, _ := LookupEndpoint(out, tc.ep)
			if got := ep.Pagination.String(); got != tc.want {
				t.Errorf("%s pages %s, want %s", tc.ep, got, tc.want)
			}
			if orig, _ := LookupEndpoint(All(), tc.ep); orig.Pagination.String() != "page" {
				t.Errorf("the declaration itself changed: %s", orig.Pagination)
			}
		})
	}
}

func TestApplyPagingRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    PagingOverrides
		want string
	}{
		{PagingOverrides{"brand": {Style: StyleOffset}}, `"brand" is not a list endpoint`},
		{PagingOverrides{"nosuch": {Style: StyleOffset}}, `"nosuch" is not a list endpoint`},
		{PagingOverrides{"*": {Style: "pages"}}, `style "pages"`},
		{PagingOverrides{"brands": {Style: StylePage, Offset: "start"}}, "offset= does not apply to style page"},
		{PagingOverrides{"brands": {Style: StyleOffset, Max: 1001}}, "max=1001 is outside 1..1000"},
		{PagingOverrides{"communications": {Style: StyleOffset}}, "only max= may be set"},
		{PagingOverrides{"communications": {Style: StylePage, Size: "limit"}}, "only max= may be set"},
	} {
		err := tc.o.Validate()
		if err == nil || !errors.Is(err, ErrPaging) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.o, err, tc.want)
		}
	}
}
