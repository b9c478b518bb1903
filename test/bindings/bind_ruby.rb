# h5mem from Ruby's sqlite3 gem: runs a plan of test_bindings.py.
#   ruby bind_ruby.rb PLAN STORE EXT
require 'sqlite3'

plan, store, ext = ARGV

def connect_db(ext)
  db = SQLite3::Database.new(':memory:')
  db.enable_load_extension(true)
  db.load_extension(ext)
  db.enable_load_extension(false)
  db
end

def param(p)
  kind, val = p.split(':', 2)
  case kind
  when 'i' then Integer(val)
  when 'r' then Float(val)
  when 't' then val
  when 'v' then SQLite3::Blob.new(val.split(',').map { |x| Float(x) }.pack('e*'))
  end
end

def fmt(c, v)
  return 'NULL' if v.nil?
  case c
  when 'f' then format('%.5e', v + 0.0)
  when 'b' then v.unpack1('H*')
  else v.to_s
  end
end

$stdout.binmode
db = connect_db(ext)
File.foreach(plan, encoding: 'UTF-8') do |line|
  kind, name, cols, sql, *params = line.chomp.split("\t")
  if kind == 'reopen'
    db.close
    db = connect_db(ext)
    next
  end
  st = db.prepare(sql.sub('@STORE@', store))
  params.each_with_index { |p, i| st.bind_param(i + 1, param(p)) }
  rows = st.execute.to_a
  st.close
  next unless kind == 'query'
  $stdout.write("== #{name}\n")
  rows.each { |r| $stdout.write(r.each_with_index.map { |v, i| fmt(cols[i], v) }.join("\t") + "\n") }
end
db.close
