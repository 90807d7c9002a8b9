package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // AGENCY_QUOTA_TZ works on hosts without zone files

	"github.com/agencysync/agencysync/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
