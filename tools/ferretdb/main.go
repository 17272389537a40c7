// Command ferretdb runs an embedded FerretDB 1.x with its SQLite handler or, given
// -postgresql-url, its PostgreSQL handler.
//
// It exists because `go install` of FerretDB's own cmd panics on a version file
// that is generated at release time; embedding the public ferretdb package avoids it.
package main

import (
	"context"
	"flag"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen-addr", "127.0.0.1:27017", "TCP address to listen on")
	dataDir := flag.String("sqlite-dir", "data/ferretdb", "directory for SQLite database files")
	postgresURL := flag.String("postgresql-url", "", "PostgreSQL URL; when set, the PostgreSQL handler is used and -sqlite-dir is ignored")
	logLevel := flag.String("log-level", "warn", "log level: debug, info, warn, error")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		log.Fatalf("bad -log-level %q: %v", *logLevel, err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	config := &ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: *listen},
		Logger:   logger,
	}
	if *postgresURL != "" {
		config.Handler = "postgresql"
		config.PostgreSQLURL = *postgresURL
	} else {
		if err := os.MkdirAll(*dataDir, 0o755); err != nil {
			log.Fatalf("cannot create %s: %v", *dataDir, err)
		}
		config.Handler = "sqlite"
		// Transactions take the write lock when they begin, so SQLite's busy timeout applies
		// to them; a deferred transaction that must upgrade its read lock gets SQLITE_BUSY at
		// once under concurrent writers ("database is locked"). Writers queue up to 60 s
		// (FerretDB's default is 10 s) before failing: bursts of hundreds of concurrent
		// writes on a shared test machine wait rather than fail.
		config.SQLiteURL = "file:" + *dataDir + "/?_txlock=immediate&_pragma=busy_timeout(60000)"
	}

	db, err := ferretdb.New(config)
	if err != nil {
		log.Fatalf("cannot start FerretDB: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	logger.Info("FerretDB listening", "addr", *listen, "handler", config.Handler)
	if err := db.Run(ctx); err != nil {
		log.Fatalf("FerretDB stopped: %v", err)
	}
}
