// Package store is the SQL store that the identity and Work planes share: a SQLite file in the
// data directory by default, or PostgreSQL when `platform serve --database-url` names one.
//
// Open connects, applies the embedded migrations of the dialect (migrations/sqlite,
// migrations/postgres, with goose) and refuses a database whose schema is newer than the binary.
// Callers write portable SQL with `?` placeholders, pass it through Rebind, and run their writes
// in InTx, which retries transactions that lost a race (SQLite busy or locked, PostgreSQL
// serialization failures and deadlocks) a bounded number of times.
//
// SQLite runs with WAL, synchronous=FULL (an acknowledged write survives power loss, as in etcd),
// foreign keys on and a busy timeout, set on every pooled connection through the DSN; write
// transactions begin IMMEDIATE so that writers queue on the busy timeout instead of failing.
//
// On PostgreSQL a transaction's BEGIN, and its writes marked Pipelined (whose caller reads no
// result back), wait on the connection until a statement needs the server's answer, and go with
// it in one round trip; the commit takes the last ones. Counts.RoundTrips counts the waits.
package store
