// h5mem from Java through xerial's sqlite-jdbc: runs a plan of test_bindings.py.
//   java -cp .:/usr/share/java/sqlite-jdbc.jar BindJava PLAN STORE EXT
import java.io.PrintStream;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.*;
import java.util.*;
import org.sqlite.SQLiteConfig;

public class BindJava {
  static Connection connect(String ext) throws SQLException {
    SQLiteConfig config = new SQLiteConfig();
    config.enableLoadExtension(true);
    Connection db = config.createConnection("jdbc:sqlite::memory:");
    try (PreparedStatement st = db.prepareStatement("SELECT load_extension(?)")) {
      st.setString(1, ext);
      st.executeQuery().close();
    }
    return db;
  }

  static void bind(PreparedStatement st, int n, String p) throws SQLException {
    String kind = p.substring(0, p.indexOf(':')), val = p.substring(p.indexOf(':') + 1);
    switch (kind) {
      case "i": st.setLong(n, Long.parseLong(val)); break;
      case "r": st.setDouble(n, Double.parseDouble(val)); break;
      case "t": st.setString(n, val); break;
      case "v": {
        String[] xs = val.split(",");
        ByteBuffer b = ByteBuffer.allocate(4 * xs.length).order(ByteOrder.LITTLE_ENDIAN);
        for (String x : xs) b.putFloat(Float.parseFloat(x));
        st.setBytes(n, b.array());
        break;
      }
      default: st.setNull(n, Types.NULL);
    }
  }

  static String fmt(char c, ResultSet rs, int i) throws SQLException {
    Object v = rs.getObject(i);
    if (v == null) return "NULL";
    switch (c) {
      case 'f':  // exact decimal rounding, as C's printf
        BigDecimal d = new BigDecimal(rs.getDouble(i) + 0.0).round(new MathContext(6, RoundingMode.HALF_EVEN));
        return String.format(Locale.ROOT, "%.5e", d);
      case 'b': {
        StringBuilder s = new StringBuilder();
        for (byte x : rs.getBytes(i)) s.append(String.format("%02x", x));
        return s.toString();
      }
      case 'i': return Long.toString(rs.getLong(i));
      default: return rs.getString(i);
    }
  }

  public static void main(String[] args) throws Exception {
    String store = args[1], ext = args[2];
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    Connection db = connect(ext);
    for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
      String[] f = line.split("\t", -1);
      if (f[0].equals("reopen")) { db.close(); db = connect(ext); continue; }
      try (PreparedStatement st = db.prepareStatement(f[3].replace("@STORE@", store))) {
        for (int i = 4; i < f.length; i++) bind(st, i - 3, f[i]);
        if (!st.execute() || !f[0].equals("query")) continue;
        out.print("== " + f[1] + "\n");
        try (ResultSet rs = st.getResultSet()) {
          while (rs.next()) {
            StringJoiner row = new StringJoiner("\t");
            for (int i = 0; i < f[2].length(); i++) row.add(fmt(f[2].charAt(i), rs, i + 1));
            out.print(row + "\n");
          }
        }
      }
    }
    db.close();
    out.flush();
  }
}
