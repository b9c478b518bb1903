# h5mem from Perl's DBD::SQLite: runs a plan of test_bindings.py.
#   perl bind_perl.pl PLAN STORE EXT
use strict;
use warnings;
use DBI qw(:sql_types);

my ($plan, $store, $ext) = @ARGV;

sub connect_db {
  my $db = DBI->connect('dbi:SQLite:dbname=:memory:', '', '',
                        {RaiseError => 1, PrintError => 0, AutoCommit => 1, sqlite_unicode => 1});
  $db->sqlite_enable_load_extension(1);
  $db->do('SELECT load_extension(?)', undef, $ext);
  $db->sqlite_enable_load_extension(0);
  return $db;
}

sub bind_p {
  my ($st, $n, $p) = @_;
  my ($kind, $val) = split /:/, $p, 2;
  return $st->bind_param($n, int($val), SQL_INTEGER) if $kind eq 'i';
  return $st->bind_param($n, $val + 0, SQL_DOUBLE) if $kind eq 'r';
  return $st->bind_param($n, $val, SQL_VARCHAR) if $kind eq 't';
  return $st->bind_param($n, pack('f<*', split /,/, $val), SQL_BLOB) if $kind eq 'v';
  return $st->bind_param($n, undef);
}

sub fmt {
  my ($c, $v) = @_;
  return 'NULL' unless defined $v;
  return sprintf('%.5e', $v + 0.0) if $c eq 'f';
  return unpack('H*', $v) if $c eq 'b';
  return $v;
}

binmode STDOUT, ':encoding(UTF-8)';
my $db = connect_db();
open my $fh, '<:encoding(UTF-8)', $plan or die "$plan: $!";
while (my $line = <$fh>) {
  chomp $line;
  my ($kind, $name, $cols, $sql, @params) = split /\t/, $line;
  if ($kind eq 'reopen') { $db->disconnect; $db = connect_db(); next; }
  $sql =~ s/\@STORE\@/$store/;
  my $st = $db->prepare($sql);
  bind_p($st, $_ + 1, $params[$_]) for 0 .. $#params;
  $st->execute;
  next unless $kind eq 'query';
  print "== $name\n";
  while (my $r = $st->fetchrow_arrayref) {
    print join("\t", map { fmt(substr($cols, $_, 1), $r->[$_]) } 0 .. $#$r), "\n";
  }
}
$db->disconnect;
