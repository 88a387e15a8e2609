# Thin wrappers over cargo and the scripts; see README.md.
CARGO ?= cargo
# The binary users run and the benchmarks measure: Cargo.toml's `dist` profile
# (tests build `release`, which takes under half the time after a change).
WEBEVO := target/dist/webevo
# Python with duckdb for the DuckDB checks and the demo query, in a local venv.
VENV := .venv
PYTHON := $(VENV)/bin/python

.PHONY: build build-pgo test demo report-screenshot spark-check bench bench-quick bench-discovery bench-change bench-rankmass bench-echo bench-exchange lint fmt schemas clean

build:
	$(CARGO) build --profile dist

# The binary a production crawl should run and the benchmarks measure: the `dist`
# profile with profile-guided optimization. An instrumented build runs
# scripts/pgo-train.sh (every analysis on a crawl of the bench's shape, a fifth
# of its size, incremental run included), and its counts of branches and calls
# steer the second build's inlining and code layout: about 7% less CPU than
# `make build` on a new bench snapshot, 13% less to read one (BENCHMARKS.md,
# "Session 62"). Two builds of the whole program: about 25 minutes on 2 cores. Needs rustup's llvm-tools component (installed here when
# missing) for llvm-profdata of rustc's own LLVM version.
WEBEVO_PGO := target/pgo/dist/webevo
PGO_DIR := $(abspath target/pgo-train)
LLVM_PROFDATA = $(shell rustc --print sysroot)/lib/rustlib/$(shell rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata

# The profile is trained again only when the program or the training changes.
PGO_SOURCES := Cargo.toml Cargo.lock scripts/pgo-train.sh $(wildcard jobs/*.toml) $(shell find src -name '*.rs')

$(PGO_DIR)/webevo.profdata: $(PGO_SOURCES)
	test -x "$(LLVM_PROFDATA)" || rustup component add llvm-tools
	rm -rf $(PGO_DIR)
	RUSTFLAGS="$(RUSTFLAGS) -Cprofile-generate=$(PGO_DIR)/raw" $(CARGO) build --profile dist --target-dir target/pgo-instrumented
	LLVM_PROFILE_FILE=$(PGO_DIR)/raw/webevo-%m-%p.profraw scripts/pgo-train.sh target/pgo-instrumented/dist/webevo $(PGO_DIR)/work
	"$(LLVM_PROFDATA)" merge -o $@.tmp $(PGO_DIR)/raw
	rm -rf $(PGO_DIR)/work $(PGO_DIR)/raw
	mv $@.tmp $@

build-pgo: $(PGO_DIR)/webevo.profdata
	RUSTFLAGS="$(RUSTFLAGS) -Cprofile-use=$(PGO_DIR)/webevo.profdata" $(CARGO) build --profile dist --target-dir target/pgo

# duckdb for the DuckDB checks, warcio for the WARC import's reference reading.
PY_DEPS := $(VENV)/.deps-2
$(PY_DEPS):
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check duckdb warcio
	touch $@

test: $(PY_DEPS)
	WEBEVO_PYTHON=$(abspath $(PYTHON)) $(CARGO) test --release

demo: build $(PY_DEPS)
	test -d demo-data/news || rm -rf demo-data
	test -d demo-data || $(WEBEVO) generate --preset demo --seed 1 --out demo-data
	rm -rf demo-out demo-out-news
	$(WEBEVO) run --input demo-data --output demo-out --job jobs/all.toml -w 2
	$(WEBEVO) run --input demo-data/news --output demo-out-news --job jobs/echo-eval.toml -w 2
	$(PYTHON) scripts/demo_query.py demo-out demo-out-news
	$(WEBEVO) report --output demo-out --output demo-out-news --html demo-out/report.html

# The README's screenshot of the demo report (needs Debian's chromium).
report-screenshot:
	test -f demo-out/report.html || $(MAKE) demo
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --hide-scrollbars --user-data-dir=$$(mktemp -d) --window-size=1280,2400 \
	  --screenshot=docs/report.png file://$(abspath demo-out/report.html)

# Spark as a client: every table of the demo output read with PySpark (partition
# discovery on), its types checked against schemas/, one query per analysis. Needs
# Java 17+; pyspark (about 300 MB) goes into its own venv. Not part of `make test`.
SPARK_VENV := .venv-spark
$(SPARK_VENV)/.deps-1:
	python3 -m venv $(SPARK_VENV)
	$(SPARK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check pyspark
	touch $@

spark-check: $(SPARK_VENV)/.deps-1
	test -d demo-out -a -d demo-out-news || $(MAKE) demo
	$(SPARK_VENV)/bin/python scripts/spark_check.py demo-out demo-out-news

# The benchmarks' peers also need NumPy (the revisit-plan peer) and igraph (the
# PageRank peer).
BENCH_DEPS := $(VENV)/.bench-deps-2
$(BENCH_DEPS): $(PY_DEPS)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check numpy igraph
	touch $@

bench: build-pgo $(BENCH_DEPS)
	WEBEVO=$(WEBEVO_PGO) $(PYTHON) benches/bench.py --preset bench

bench-quick: build-pgo $(BENCH_DEPS)
	WEBEVO=$(WEBEVO_PGO) $(PYTHON) benches/bench.py --preset demo

# Only the change entry (per-snapshot cost, the revisit solve vs its NumPy peer)
# on the bench preset.
bench-change: build-pgo $(BENCH_DEPS)
	WEBEVO=$(WEBEVO_PGO) $(PYTHON) benches/bench.py --preset bench --change-only

# Only the RankMass entry (PageRank vs igraph PRPACK, the orderings vs one solve)
# on the bench preset.
bench-rankmass: build-pgo $(BENCH_DEPS)
	WEBEVO=$(WEBEVO_PGO) $(PYTHON) benches/bench.py --preset bench --rankmass-only

# Only the exchange entry (2 processes on loopback: bytes between them per
# snapshot) on the bench preset.
bench-exchange: build-pgo $(BENCH_DEPS)
	WEBEVO=$(WEBEVO_PGO) $(PYTHON) benches/bench.py --preset bench --exchange-only

# Only the ECHO entry (per-snapshot cost on the news crawl, the 100k-source
# schedule solve) on the bench preset.
bench-echo: build-pgo $(BENCH_DEPS)
	WEBEVO=$(WEBEVO_PGO) $(PYTHON) benches/bench.py --preset bench --echo-only

# Only the discovery comparison (webevo vs its DuckDB SQL peer, with the correctness
# check) on the demo preset.
bench-discovery: build-pgo $(BENCH_DEPS)
	WEBEVO=$(WEBEVO_PGO) $(PYTHON) benches/bench.py --preset demo --discovery-only

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

schemas: build
	$(WEBEVO) schemas

clean:
	rm -rf demo-data demo-out demo-out-news bench-data bench-out demo-out-discovery bench-out-discovery demo-out-change bench-out-change demo-out-rankmass bench-out-rankmass demo-out-echo bench-out-echo $(VENV)
