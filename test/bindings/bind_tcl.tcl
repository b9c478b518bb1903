# h5mem from Tcl's sqlite3 package: runs a plan of test_bindings.py.
#   tclsh bind_tcl.tcl PLAN STORE EXT
package require sqlite3
lassign $argv plan store ext
set null "\x01NULL"

proc connect {} {
  global ext null
  sqlite3 db :memory:
  db enable_load_extension 1
  db eval {SELECT load_extension($ext)}
  db enable_load_extension 0
  db nullvalue $null
}

# the value of a parameter, typed as tclsqlite binds it (NULL: the variable unset)
proc param {p var} {
  upvar $var v
  set val [string range $p 2 end]
  switch [string index $p 0] {
    i { set v [expr {wide($val)}] }
    r { set v [expr {double($val)}] }
    t { set v $val }
    v { set v [binary format r* [split $val ,]] }
  }
}

proc fmt {c v} {
  global null
  if {$v eq $null} { return NULL }
  switch $c {
    f { return [format %.5e [expr {$v + 0.0}]] }
    b { binary scan $v H* h; return $h }
    default { return $v }
  }
}

fconfigure stdout -encoding utf-8 -translation lf
connect
set f [open $plan r]
fconfigure $f -encoding utf-8
while {[gets $f line] >= 0} {
  set fields [split $line \t]
  lassign $fields kind name cols sql
  if {$kind eq "reopen"} { db close; connect; continue }
  foreach v [info vars {p[0-9]*}] { unset $v }
  set n 0
  foreach p [lrange $fields 4 end] { param $p p[incr n] }
  set sql [string map [list @STORE@ $store] $sql]
  if {$kind eq "query"} { puts "== $name" }
  db eval $sql row {
    if {$kind ne "query"} continue
    set out {}
    set i 0
    foreach col $row(*) { lappend out [fmt [string index $cols $i] $row($col)]; incr i }
    puts [join $out \t]
  }
}
close $f
db close
