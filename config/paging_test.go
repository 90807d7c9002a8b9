package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPagingFromVariableAndFile(t *testing.T) {
	t.Parallel()
	const file = `paging:
  "*": offset:max=100
  brand_contacts: {style: none}
  budgets:
    style: offset
    size: per_page
projects:
  name: title
`
	for _, tc := range []struct {
		name  string
		vars  map[string]string
		files map[string]string
		want  PagingSettings
	}{
		{"unset", nil, nil, nil},
		{"variable", map[string]string{"AGENCY_PAGING": "*=offset:max=100, brands=cursor:cursor=after,communications=page:max=500"}, nil,
			PagingSettings{"*": {Style: "offset", Max: 100}, "brands": {Style: "cursor", Cursor: "after"}, "communications": {Style: "page", Max: 500}}},
		{"renamed parameters", map[string]string{"AGENCY_PAGING": "projects=page:page=p:size=limit"}, nil,
			PagingSettings{"projects": {Style: "page", Page: "p", Size: "limit"}}},
		{"file", map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml"}, map[string]string{"/f.yaml": file},
			PagingSettings{"*": {Style: "offset", Max: 100}, "brand_contacts": {Style: "none"}, "budgets": {Style: "offset", Size: "per_page"}}},
		{"variable overrides the file entry by entry", map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml", "AGENCY_PAGING": "*=cursor"},
			map[string]string{"/f.yaml": file},
			PagingSettings{"*": {Style: "cursor"}, "brand_contacts": {Style: "none"}, "budgets": {Style: "offset", Size: "per_page"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := mustLoad(t, env(tc.vars), files(tc.files))
			if !reflect.DeepEqual(cfg.Paging, tc.want) {
				t.Errorf("paging in force %v, want %v", cfg.Paging, tc.want)
			}
			if tc.name == "file" && cfg.FieldMap["projects.name"] != "title" {
				t.Errorf("the file's field map was lost beside its paging: %v", cfg.FieldMap)
			}
		})
	}
}

func TestPagingErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vars     map[string]string
		files    map[string]string
		variable string
		want     string
	}{
		{map[string]string{"AGENCY_PAGING": "brands"}, nil, "AGENCY_PAGING", `"brands" is not endpoint=style`},
		{map[string]string{"AGENCY_PAGING": "brands=pages"}, nil, "AGENCY_PAGING", `style "pages" is not one of page, offset, cursor, none`},
		{map[string]string{"AGENCY_PAGING": "brands=offset:max=5000"}, nil, "AGENCY_PAGING", "max=5000 is not a page size from 1 to 1000"},
		{map[string]string{"AGENCY_PAGING": "brands=offset:max=ten"}, nil, "AGENCY_PAGING", "max=ten"},
		{map[string]string{"AGENCY_PAGING": "brands=page:offset=start"}, nil, "AGENCY_PAGING", "offset= does not apply to style page"},
		{map[string]string{"AGENCY_PAGING": "brands=offset:limit=50"}, nil, "AGENCY_PAGING", "unknown option limit="},
		{map[string]string{"AGENCY_PAGING": "brands=offset:size=a b"}, nil, "AGENCY_PAGING", "is not a parameter name"},
		{map[string]string{"AGENCY_PAGING": "brands=offset,brands=page"}, nil, "AGENCY_PAGING", `endpoint "brands" twice`},
		{map[string]string{"AGENCY_PAGING": "brand=offset"}, nil, "AGENCY_PAGING", `unknown list endpoint "brand"`},
		{map[string]string{"AGENCY_PAGING": "communications=offset"}, nil, "AGENCY_PAGING", "only max= may be set"},
		{map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml"}, map[string]string{"/f.yaml": "paging:\n  brands: offset:max=0\n"},
			"AGENCY_FIELD_MAP_FILE", "line 2: paging: brands: max=0"},
		{map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml"}, map[string]string{"/f.yaml": "paging:\n  nosuch: offset\n"},
			"AGENCY_FIELD_MAP_FILE", `unknown list endpoint "nosuch"`},
		{map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml"}, map[string]string{"/f.yaml": "paging:\n  brands: {max: 10}\n"},
			"AGENCY_FIELD_MAP_FILE", "no style:"},
		{map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml"}, map[string]string{"/f.yaml": "paging: offset\n"},
			"AGENCY_FIELD_MAP_FILE", "line 1: paging: want a mapping"},
	} {
		_, err := loadTest(env(tc.vars), files(tc.files))
		var ce *Error
		if !errors.As(err, &ce) || ce.Variable != tc.variable || !strings.Contains(ce.Error(), tc.want) {
			t.Errorf("%v: error %v, want %s saying %q", tc.vars, err, tc.variable, tc.want)
		}
	}
}

func TestPagingSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	const v = "*=offset:max=100,brands=cursor:cursor=after,projects=page:page=p:size=limit"
	var p PagingSettings
	if err := p.EnvDecode(v); err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != v {
		t.Errorf("String() = %q, want %q", got, v)
	}
}
