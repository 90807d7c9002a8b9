# agencysync — make help lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO    ?= go
BIN   := bin
PKGS  := ./...
TEST_USER ?= agencytest
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/agencysync/agencysync/cli.Version=$(VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/agencysync and bin/agencysandbox
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/agencysync ./cmd/agencysync
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/agencysandbox ./cmd/agencysandbox

.PHONY: test
test: ## run every test with the race detector (DATABASE_URL, or a private PostgreSQL cluster)
	$(GO) test -race -timeout 30m $(PKGS)

# The packages whose code or tests touch the database or the file system
# (PostgreSQL, the private cluster, the page spool): the ones the
# least-privileged and unprivileged passes have something different to test.
DB_PKGS = $(shell $(GO) list -f '{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' $(PKGS) \
	| awk -F'|' '$$1 ~ /\/spool$$/ || $$2 ~ /jackc\/pgx|testkit\/(warehousetest|childproc|enginetest)|agencysync\/(warehouse|spool)( |$$)/ { print $$1 }')

.PHONY: test-db
test-db: ## run the tests of the packages that touch the database or the file system (DB_PKGS)
	$(GO) test -race -timeout 30m $(DB_PKGS)

.PHONY: test-schema-owner
test-schema-owner: ## run the database and file-system packages' tests with the commands under test connected as a role that owns only its schema (no CREATE on the database)
	AGENCYSYNC_TEST_SCHEMA_OWNER=1 $(GO) test -race -count=1 -timeout 30m $(DB_PKGS)

.PHONY: test-soak
test-soak: ## run the reliability suite at soak sizes (200 000 e-mails, more kills, longer faults)
	AGENCYSYNC_SOAK=1 $(GO) test -race -count=1 -timeout 90m -v ./reliability/

.PHONY: reliability-report
reliability-report: ## run the reliability suite and write its results table into docs/reliability.md
	@grep -q '^<!-- reliability:begin -->' docs/reliability.md && grep -q '^<!-- reliability:end -->' docs/reliability.md \
	  || { echo "docs/reliability.md lacks the <!-- reliability:begin/end --> markers"; exit 1; }
	@results=$$(mktemp); trap 'rm -f "$$results" docs/reliability.md.tmp' EXIT; rc=0; start=$$(date +%s); \
	AGENCYSYNC_RESULTS="$$results" $(GO) test -race -count=1 -timeout 30m ./reliability/ || rc=$$?; \
	if [ -s "$$results" ]; then \
	  printf '\nThe suite (`go test -race ./reliability/`, default sizes) took %d s on %d cores.\n' \
	    $$(( $$(date +%s) - start )) $$(nproc) >> "$$results"; \
	  awk -v table="$$results" ' \
	    /^<!-- reliability:begin -->/ { print; while ((getline line < table) > 0) print line; skip = 1; next } \
	    /^<!-- reliability:end -->/ { skip = 0 } \
	    !skip { print }' docs/reliability.md > docs/reliability.md.tmp && mv docs/reliability.md.tmp docs/reliability.md; \
	  echo "docs/reliability.md: results rewritten"; \
	fi; exit $$rc

.PHONY: test-unprivileged
test-unprivileged: ## (root) run make test-db as an ordinary user, DATABASE_URL unset: private clusters, no root
	@test "$$(id -u)" = 0 || { echo "test-unprivileged switches user: run it as root (an ordinary user runs make test)"; exit 1; }
	id $(TEST_USER) >/dev/null 2>&1 || useradd --create-home --shell /bin/bash $(TEST_USER)
	rm -rf /home/$(TEST_USER)/agencysync
	mkdir -p /home/$(TEST_USER)/agencysync
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t /home/$(TEST_USER)/agencysync
	chown -R $(TEST_USER): /home/$(TEST_USER)
	runuser -u $(TEST_USER) -- env -u DATABASE_URL HOME=/home/$(TEST_USER) PATH="$$PATH" \
		GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOPROXY="$$(go env GOPROXY)" \
		$(MAKE) -C /home/$(TEST_USER)/agencysync test-db

.PHONY: demo
demo: build ## start the sandbox (free ports), sync it into the default warehouse, print what landed and the psql command
	./deploy/demo.sh

.PHONY: lint
lint: ## gofmt check and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: bench
bench: ## measure the performance figures (real binaries, sandbox, PostgreSQL; ~25 min on 2 cores) into BENCHMARKS.md
	$(GO) run ./cmd/agencybench --out BENCHMARKS.md

.PHONY: bench-quick
bench-quick: ## the same table with smaller sizes in ~3 min (printed only; BENCHMARKS.md is left alone)
	$(GO) run ./cmd/agencybench --quick --out ''

.PHONY: bench-large
bench-large: ## figure 8 alone, the large agency (200 brands x 20 projects, 1 M e-mails; printed only)
	$(GO) run ./cmd/agencybench --figures 8 --out ''

.PHONY: clean
clean: ## remove binaries and the demo's logs (the private warehouse's folder is kept: see the README)
	rm -rf $(BIN) .data
