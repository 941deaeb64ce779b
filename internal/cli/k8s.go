package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/k8s"
	"github.com/goodput/goodput/internal/shard"
)

// A load too big for one machine runs as shards of one schedule on many:
// bench's --shard, --shards, --start-at and --rendezvous, and "goodput k8s
// job" and "goodput k8s collect", which write the Kubernetes Jobs that run
// and merge the shards (shard.Job). See docs/scale-out.md.

func newK8sCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "k8s", Short: "Write Kubernetes manifests that run one load as shards on many machines",
		Long: helpText("k8s"), Args: noArgs, RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	cmd.AddCommand(newK8sJobCmd(env), newK8sCollectCmd(env))
	return cmd
}

// afterDash takes the arguments after -- (another command's flags) only.
func afterDash(whose string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
			return usagef("unexpected argument %q: %s flags go after --", args[0], whose)
		}
		return nil
	}
}

func newK8sJobCmd(env Env) *cobra.Command {
	var j shard.Job
	bo := &BenchOptions{}
	cmd := &cobra.Command{Use: "job --shards N --base-url URL [flags] [-- BENCH FLAGS...]",
		Short: "Write an Indexed Job that runs goodput bench as N shards of one schedule",
		Long:  helpText("k8s-job"), Example: helpText("k8s-job.examples"), Args: afterDash("bench's")}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return settingError(cmd.Flags(), &struct {
			*shard.Job
			bench *BenchOptions
		}{&j, bo}, writeK8sJob(env, cmd.Flags(), &j, bo, args))
	}
	fs := cmd.Flags()
	fs.StringVar(&j.Name, "name", "goodput-bench", "name of the Job, its Service and pods")
	fs.StringVar(&j.Namespace, "namespace", "", "namespace of the objects (default: kubectl's)")
	fs.IntVar(&j.Shards, "shards", 0, "pods, one shard of the schedule each")
	fs.StringVar(&j.BaseURL, "base-url", "", "the server's root URL as the pods reach it")
	fs.StringVar(&j.APIKeySecret, "api-key-secret", "", "NAME/KEY of the Secret holding the API key (read into the pods' environment, never written in the manifest)")
	fs.StringVar(&j.Image, "image", "goodput:latest", "goodput's image (build it with the repository's Dockerfile)")
	fs.StringVar(&j.CPU, "cpu", "2", "CPU each pod requests, and is limited to")
	fs.StringVar(&j.Memory, "memory", "1Gi", "memory each pod requests, and is limited to")
	fs.StringVar(&j.StartAt, "start-at", "", "a fixed start (RFC 3339) instead of the rendezvous; the manifest goes stale once it passes")
	fs.IntVar(&j.Port, "port", 7077, "port of pod 0's rendezvous")
	fs.StringVar(&j.RecordsClaim, "records-claim", "", "a ReadWriteMany PersistentVolumeClaim for the records (default: each pod's log)")
	fs.StringVar(&j.Spread, "spread", "preferred", "spreading the pods over nodes: preferred, or required (one pod a node; pods wait for a free node)")
	return cmd
}

func newK8sCollectCmd(env Env) *cobra.Command {
	var c shard.Collect
	cmd := &cobra.Command{Use: "collect --shards N --records-claim CLAIM [flags] [-- REPORT FLAGS...]",
		Short: "Write a Job that merges the shards' records with goodput report", Long: helpText("k8s-collect"), Args: afterDash("report's")}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return settingError(cmd.Flags(), &c, writeK8sCollect(env, &c, args))
	}
	fs := cmd.Flags()
	fs.StringVar(&c.Name, "name", "goodput-bench", "name of the shards' Job (the collector is NAME-report)")
	fs.StringVar(&c.Namespace, "namespace", "", "namespace of the Job (default: kubectl's)")
	fs.IntVar(&c.Shards, "shards", 0, "the shards' count")
	fs.StringVar(&c.Image, "image", "goodput:latest", "goodput's image")
	fs.StringVar(&c.RecordsClaim, "records-claim", "", "the claim the shards wrote their records to")
	return cmd
}

// writeK8sJob checks the Job's flags, then bench's (args) into bo as
// bench checks them, so a typo fails here rather than in N pods, and
// writes the shards' manifests.
func writeK8sJob(env Env, fs *pflag.FlagSet, j *shard.Job, bo *BenchOptions, args []string) error {
	if _, err := j.Check(env.Now()); err != nil {
		return err
	}
	bc := benchCommand(env, bo)
	if err := bc.ParseFlags(args); err != nil {
		return usagef("bench flag after --: %v", err)
	}
	if tok := bo.work.o.Tokenizer; tok != "" && !strings.HasPrefix(tok, "tiktoken:") {
		fmt.Fprintf(env.Stderr, "goodput: --tokenizer %s is read in the pods: it must be at that path in the image or a volume\n", tok)
	}
	fs.AddFlagSet(bc.Flags()) // they name the Bench fields: --api-key-env the key's variable as bench resolved it
	j.Bench = shard.JobBench{Args: args, Workload: &bo.work.o, APIKeyEnv: bo.target.KeyEnv(), Quiet: bo.out.Quiet,
		Given: bc.Flags().Changed, Rest: bc.Flags().Args(), SLO: len(bo.out.Goodput) > 0}
	head, docs, err := j.Manifests(env.Now(), func(p string) ([]byte, error) { return os.ReadFile(resolve(env, p)) })
	if err != nil {
		return err
	}
	return k8s.Write(env.Stdout, head, docs)
}

// writeK8sCollect writes the Job that merges the shards' records, its own
// flags checked before report's (args).
func writeK8sCollect(env Env, c *shard.Collect, args []string) error {
	if _, err := c.Check(); err != nil {
		return err
	}
	rc := newReportCmd(env)
	if err := rc.ParseFlags(args); err != nil {
		return usagef("report flag after --: %v", err)
	}
	c.Report, c.ReportRest, c.ReportGiven = args, rc.Flags().Args(), rc.Flags().Changed
	head, docs, err := c.Manifests()
	if err != nil {
		return err
	}
	return k8s.Write(env.Stdout, head, docs)
}
