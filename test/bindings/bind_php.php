<?php
// h5mem from PHP's SQLite3 class: runs a plan of test_bindings.py.
//   php -d sqlite3.extension_dir=DIR bind_php.php PLAN STORE EXT
// (loadExtension takes a file name in sqlite3.extension_dir, a system ini setting)
[, $plan, $store, $ext] = $argv;

function connect_db(string $ext): SQLite3 {
  $db = new SQLite3(':memory:');
  $db->enableExceptions(true);
  $file = file_exists($ext) ? basename($ext) : basename($ext) . '.so';
  if (realpath(ini_get('sqlite3.extension_dir')) !== realpath(dirname($ext)))
    throw new Exception('sqlite3.extension_dir must be ' . dirname($ext));
  $db->loadExtension($file);
  return $db;
}

function bind_p(SQLite3Stmt $st, int $n, string $p): void {
  [$kind, $val] = explode(':', $p, 2);
  match ($kind) {
    'i' => $st->bindValue($n, intval($val), SQLITE3_INTEGER),
    'r' => $st->bindValue($n, floatval($val), SQLITE3_FLOAT),
    't' => $st->bindValue($n, $val, SQLITE3_TEXT),
    'v' => $st->bindValue($n, pack('g*', ...array_map('floatval', explode(',', $val))), SQLITE3_BLOB),
    'n' => $st->bindValue($n, null, SQLITE3_NULL),
  };
}

function fmt(string $c, $v): string {
  if ($v === null) return 'NULL';
  if ($c === 'f') return preg_replace('/e([+-])(\d)$/', 'e${1}0$2', sprintf('%.5e', $v + 0.0));
  if ($c === 'b') return bin2hex($v);
  return (string)$v;
}

$db = connect_db($ext);
foreach (file($plan, FILE_IGNORE_NEW_LINES) as $line) {
  $f = explode("\t", $line);
  [$kind, $name, $cols, $sql] = array_pad($f, 4, '');
  if ($kind === 'reopen') { $db->close(); $db = connect_db($ext); continue; }
  $st = $db->prepare(str_replace('@STORE@', $store, $sql));
  foreach (array_slice($f, 4) as $i => $p) bind_p($st, $i + 1, $p);
  $res = $st->execute();
  if ($kind === 'query') {
    echo "== $name\n";
    while (($r = $res->fetchArray(SQLITE3_NUM)) !== false)
      echo implode("\t", array_map(fn($v, $i) => fmt($cols[$i], $v), $r, array_keys($r))), "\n";
  }
  $res->finalize();
  $st->close();
}
$db->close();
