module github.com/goodput/goodput

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
