// Command etcd runs the etcd server that kubernetes v1.37.2 is built against, for Phalanx's tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
