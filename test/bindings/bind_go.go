// h5mem from Go through mattn/go-sqlite3 (Debian's, on the system libsqlite3;
// built with -tags libsqlite3): runs a plan of test_bindings.py.
//   bind_go PLAN STORE EXT
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/mattn/go-sqlite3"
)

var ctx = context.Background()

// one connection: each of database/sql's pooled ones would be another :memory: database
func connect(db *sql.DB) *sql.Conn {
	c, err := db.Conn(ctx)
	check(err)
	return c
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func param(p string) interface{} {
	kind, val, _ := strings.Cut(p, ":")
	switch kind {
	case "i":
		n, err := strconv.ParseInt(val, 10, 64)
		check(err)
		return n
	case "r":
		x, err := strconv.ParseFloat(val, 64)
		check(err)
		return x
	case "t":
		return val
	case "v":
		xs := strings.Split(val, ",")
		b := make([]byte, 4*len(xs))
		for i, x := range xs {
			f, err := strconv.ParseFloat(x, 32)
			check(err)
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(f)))
		}
		return b
	}
	return nil
}

var exp1 = regexp.MustCompile(`e([+-])(\d)$`)

func format(c byte, v interface{}) string {
	if v == nil {
		return "NULL"
	}
	switch c {
	case 'f':
		return exp1.ReplaceAllString(fmt.Sprintf("%.5e", v.(float64)+0.0), "e${1}0$2")
	case 'b':
		return hex.EncodeToString(v.([]byte))
	}
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

func main() {
	plan, store, ext := os.Args[1], os.Args[2], os.Args[3]
	sql.Register("sqlite3_h5mem", &sqlite3.SQLiteDriver{Extensions: []string{ext}})
	db, err := sql.Open("sqlite3_h5mem", ":memory:")
	check(err)
	conn := connect(db)
	f, err := os.Open(plan)
	check(err)
	out := bufio.NewWriter(os.Stdout)
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fl := strings.Split(lines.Text(), "\t")
		if fl[0] == "reopen" {
			check(conn.Close())
			check(db.Close())
			db, err = sql.Open("sqlite3_h5mem", ":memory:")
			check(err)
			conn = connect(db)
			continue
		}
		var args []interface{}
		for _, p := range fl[4:] {
			args = append(args, param(p))
		}
		rows, err := conn.QueryContext(ctx, strings.Replace(fl[3], "@STORE@", store, 1), args...)
		check(err)
		if fl[0] == "query" {
			fmt.Fprintf(out, "== %s\n", fl[1])
		}
		cols, _ := rows.Columns()
		vals := make([]interface{}, len(cols))
		ptrs := make([]interface{}, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			check(rows.Scan(ptrs...))
			if fl[0] == "query" {
				row := make([]string, len(cols))
				for i, v := range vals {
					row[i] = format(fl[2][i], v)
				}
				fmt.Fprintln(out, strings.Join(row, "\t"))
			}
		}
		check(rows.Err())
		check(rows.Close())
	}
	check(lines.Err())
	check(conn.Close())
	check(db.Close())
	check(out.Flush())
}
