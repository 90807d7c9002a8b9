package benchmark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// truthLine is one line of GET /_sandbox/truth.
type truthLine struct {
	Stream  string          `json:"stream"`
	Key     string          `json:"key"`
	BrandID string          `json:"brand_id"`
	Record  json.RawMessage `json:"record"`
}

// FinanceRecord is a budget, invoice, collection or payment of the truth.
type FinanceRecord struct {
	Kind   string // budgets, invoices, collections or payments
	ID     string
	Amount json.Number
}

// TruthHead is what the truth holds before its communications: the
// inventory (with the e-mail count from the stats) and the ids the steady
// state scenario edits.
type TruthHead struct {
	Inventory Inventory
	Projects  []string
	Finance   []FinanceRecord
}

// eachTruthLine calls fn for every line of the truth until fn returns false.
func (s *Sandbox) eachTruthLine(ctx context.Context, fn func(l *truthLine) (bool, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a stream left early is abandoned, which releases the sandbox's lock
	body, err := s.Truth(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	rd := bufio.NewReaderSize(body, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var l truthLine
			if err := json.Unmarshal(line, &l); err != nil {
				return fmt.Errorf("decode truth line: %w", err)
			}
			more, ferr := fn(&l)
			if ferr != nil || !more {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read truth: %w", err)
		}
	}
}

// Head reads the truth up to its communications (which it does not
// download) and counts the e-mails from the stats.
func (s *Sandbox) Head(ctx context.Context) (*TruthHead, error) {
	h := &TruthHead{Inventory: Inventory{ContactsByBrand: map[string]int{}}}
	inv := &h.Inventory
	err := s.eachTruthLine(ctx, func(l *truthLine) (bool, error) {
		switch l.Stream {
		case "communications":
			return false, nil
		case "brands":
			inv.Brands++
		case "contacts":
			inv.ContactsByBrand[l.BrandID]++
		case "projects":
			inv.Projects++
			h.Projects = append(h.Projects, l.Key)
		case "budgets", "invoices", "collections", "payments":
			var rec struct {
				Amount json.Number `json:"amount"`
			}
			d := json.NewDecoder(bytes.NewReader(l.Record))
			d.UseNumber()
			if err := d.Decode(&rec); err != nil {
				return false, fmt.Errorf("decode truth %s %s: %w", l.Stream, l.Key, err)
			}
			h.Finance = append(h.Finance, FinanceRecord{Kind: l.Stream, ID: l.Key, Amount: rec.Amount})
			switch l.Stream {
			case "budgets":
				inv.Budgets++
			case "invoices":
				inv.Invoices++
			case "collections":
				inv.Collections++
			default:
				inv.Payments++
			}
		case "profitability":
			if strings.HasPrefix(l.Key, "brand:") {
				inv.ProfitabilityBrand++
			} else {
				inv.ProfitabilityProject++
			}
		case "summary":
			inv.Summary++
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	st, err := s.Stats(ctx)
	if err != nil {
		return nil, err
	}
	inv.Emails = st.Emails
	return h, nil
}

// CommsPages streams the truth's communications as page bodies of the
// communications endpoint (keyed rows, perPage records each) and calls fn
// with each; fn must not keep the body.
func (s *Sandbox) CommsPages(ctx context.Context, perPage int, fn func(body []byte) error) error {
	var body bytes.Buffer
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		fmt.Fprintf(&body, `},"total":%d,"per_page":%d,"current_page":1,"last_page":1}}`, n, n)
		err := fn(body.Bytes())
		body.Reset()
		n = 0
		return err
	}
	err := s.eachTruthLine(ctx, func(l *truthLine) (bool, error) {
		if l.Stream != "communications" {
			return true, nil
		}
		if n == 0 {
			body.WriteString(`{"data":{"rows":{`)
		} else {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, "%q:", l.Key)
		body.Write(l.Record)
		n++
		if n == perPage {
			return true, flush()
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return flush()
}
