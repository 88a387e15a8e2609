"""Spark as a real client of webevo's output.

    spark_check.py OUT NEWS_OUT

Reads every table of schemas/ with spark.read.parquet (partition discovery on,
as Spark does by default), prints its row count, checks that Spark infers the
column types the schema file declares (the `snapshot` partition column, which
Spark's partition discovery always types as the narrowest integer, as int), reads
it again with the declared schema (`snapshot` bigint), and runs one query per
analysis. OUT is a
jobs/all.toml run on the demo crawl, NEWS_OUT a jobs/echo-eval.toml run on its
news crawl (`make demo` writes both). Exit code 1 on a mismatch.
"""

import glob
import json
import os
import sys

from pyspark.sql import SparkSession

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ECHO_TABLES = {"content_sources", "source_estimates", "echo_schedule", "echo_plan", "echo_eval"}

# schema type -> Spark's simpleString of the type it infers.
SPARK_TYPES = {
    "int64": "bigint",
    "int32": "int",
    "float64": "double",
    "string": "string",
    "boolean": "boolean",
    "timestamp[us, UTC]": "timestamp",
}

QUERIES = {
    "discovery": """
        select snapshot, sum(new_pages) as new_pages, sum(cover90_size) as cover90_pages
        from cover_summary group by snapshot order by snapshot""",
    "change": """
        select design, round(avg(freshness), 3) as freshness
        from freshness_designs group by design order by design""",
    "rankmass": """
        select algorithm, `window`, downloads_to_098_guaranteed, downloads_to_098_actual
        from rankmass_summary where snapshot = (select max(snapshot) from rankmass_summary)
        order by algorithm, `window`""",
    "echo": """
        select crawl_rate_per_s, policy, round(overall_quality, 3) as clicks_per_s
        from echo_eval order by crawl_rate_per_s, overall_quality desc""",
}


def spark_schema(schema):
    """A Spark schema from a schemas/*.json file (DDL text Spark parses)."""
    ddl = {
        "int64": "BIGINT",
        "int32": "INT",
        "float64": "DOUBLE",
        "string": "STRING",
        "boolean": "BOOLEAN",
        "timestamp[us, UTC]": "TIMESTAMP",
    }
    return ", ".join(f"`{c['name']}` {ddl[c['type']]}" for c in schema["columns"])


def main():
    out, news = (os.path.abspath(a) for a in sys.argv[1:3])
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("webevo-spark-check")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    failures = []
    for path in sorted(glob.glob(os.path.join(ROOT, "schemas", "*.json"))):
        schema = json.load(open(path))
        table = schema["table"]
        base = news if table in ECHO_TABLES else out
        df = spark.read.parquet(os.path.join(base, table))
        df.createOrReplaceTempView(table)
        got = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        # Spark types a Hive partition value by the narrowest type that holds
        # every value seen (int for snapshot numbers below 2^31), whatever the
        # writer meant; the data columns come from the Parquet footers.
        want = {
            c["name"]: "int" if c.get("partition") else SPARK_TYPES[c["type"]]
            for c in schema["columns"]
        }
        for name, t in want.items():
            if got.get(name) != t:
                failures.append(f"{table}.{name}: Spark infers {got.get(name)}, schema says {t}")
        if set(got) != set(want):
            failures.append(f"{table}: columns {sorted(got)} != schema {sorted(want)}")
        rows = df.count()
        # Read again with the declared schema: every column, snapshot included,
        # as schemas/ says.
        declared = spark.read.schema(spark_schema(schema)).parquet(os.path.join(base, table))
        if declared.count() != rows:
            failures.append(f"{table}: {rows} rows inferred, {declared.count()} with the schema")
        for c in schema["columns"]:
            t = declared.schema[c["name"]].dataType.simpleString()
            if t != SPARK_TYPES[c["type"]]:
                failures.append(f"{table}.{c['name']}: {t} with the declared schema")
        print(f"{table}: {rows} rows")
    for analysis, sql in QUERIES.items():
        print(f"\n-- {analysis}")
        spark.sql(sql).show(20, truncate=False)
    spark.stop()
    if failures:
        print("FAILED:\n" + "\n".join(failures))
        sys.exit(1)
    print("every table reads in Spark with the column types of schemas/")


if __name__ == "__main__":
    main()
