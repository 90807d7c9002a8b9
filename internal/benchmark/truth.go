package benchmark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
)

// FinanceRecord is a budget, invoice, collection or payment of the truth.
type FinanceRecord struct {
	Kind   string // budgets, invoices, collections or payments
	ID     string
	Amount json.Number
}

// TruthHead is what the truth holds before its communications: the
// inventory of a first sync (with the e-mail count from the stats) and the
// ids the steady state scenario edits.
type TruthHead struct {
	Inventory oracle.Inventory
	Projects  []string
	Finance   []FinanceRecord
}

// eachTruthLine calls fn for every line of the truth until fn returns false.
func (s *Sandbox) eachTruthLine(ctx context.Context, fn func(l oracle.Line) (bool, error)) error {
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
			var l oracle.Line
			if err := json.Unmarshal(line, &l); err != nil {
				return fmt.Errorf("decode truth line: %w", err)
			}
			more, ferr := fn(l)
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
// download), counts its first sync's inventory (oracle.Truth.FirstSync) and
// the e-mails from the stats.
func (s *Sandbox) Head(ctx context.Context) (*TruthHead, error) {
	h := &TruthHead{}
	tr := oracle.Truth{}
	err := s.eachTruthLine(ctx, func(l oracle.Line) (bool, error) {
		if l.Stream == "communications" {
			return false, nil
		}
		tr[l.Stream] = append(tr[l.Stream], l)
		switch l.Stream {
		case "projects":
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
	h.Inventory = tr.FirstSync()
	h.Inventory.Emails = st.Emails
	return h, nil
}

// CommsPages streams the truth's communications in pages of perPage
// records and calls fn with each page's rows as the oracle builds them
// (oracle.Comms: emails, email_recipients, users, rejects; users merged
// within the page, as a page commit merges them).
func (s *Sandbox) CommsPages(ctx context.Context, perPage int, fn func(page *oracle.Comms) error) error {
	page := oracle.NewComms()
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		err := fn(page)
		page, n = oracle.NewComms(), 0
		return err
	}
	err := s.eachTruthLine(ctx, func(l oracle.Line) (bool, error) {
		if l.Stream != "communications" {
			return true, nil
		}
		if err := page.Add(l); err != nil {
			return false, err
		}
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
