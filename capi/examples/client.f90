! A Fortran client of peerpipe through iso_c_binding: spawns a server, echoes the awkward
! values (NaN payloads, -0.0, subnormals, infinities) bit for bit in real64 and real32.
!
!   client_f90 PROGRAM [ARGS...]      e.g. client_f90 target/release/peer --role server
!
! Exits 0 when every value came back bit-exact, 1 when one did not, 2 on a peerpipe error.
module peerpipe
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int), parameter :: PP_OK = 0

  interface
    integer(c_int) function pp_spawn(argv, argc, out) bind(c, name="pp_spawn")
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), intent(in) :: argv(*)
      integer(c_size_t), value :: argc
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function pp_call_f64(peer, in, n, out, out_len, timing) bind(c, name="pp_call_f64")
      import :: c_int, c_size_t, c_ptr, c_double
      type(c_ptr), value :: peer
      real(c_double), intent(in) :: in(*)
      integer(c_size_t), value :: n
      real(c_double), intent(out) :: out(*)
      integer(c_size_t), value :: out_len
      type(c_ptr), value :: timing
    end function
    integer(c_int) function pp_call_f32(peer, in, n, out, out_len, timing) bind(c, name="pp_call_f32")
      import :: c_int, c_size_t, c_ptr, c_float
      type(c_ptr), value :: peer
      real(c_float), intent(in) :: in(*)
      integer(c_size_t), value :: n
      real(c_float), intent(out) :: out(*)
      integer(c_size_t), value :: out_len
      type(c_ptr), value :: timing
    end function
    integer(c_int) function pp_close(peer) bind(c, name="pp_close")
      import :: c_int, c_ptr
      type(c_ptr), value :: peer
    end function
    type(c_ptr) function pp_last_error() bind(c, name="pp_last_error")
      import :: c_ptr
    end function
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
  end interface

contains

  ! This thread's last peerpipe error message, as a Fortran string.
  function last_error() result(message)
    character(len=:), allocatable :: message
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: text
    integer :: i, n
    text = pp_last_error()
    n = int(c_strlen(text))
    call c_f_pointer(text, chars, [n])
    allocate(character(len=n) :: message)
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function

end module peerpipe

program client_f90
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int32, int64, error_unit
  use peerpipe
  implicit none
  integer, parameter :: n = 10
  ! The same bit patterns as client.c: quiet NaN, NaN with a payload, negative signalling
  ! NaN, -0.0, smallest subnormal, largest negative subnormal, +inf, -inf, largest, 1.0.
  integer(int64), parameter :: bits64(n) = [ &
    int(z'7FF8000000000000', int64), int(z'7FF8DEAD0000BEEF', int64), &
    -int(z'000FFFFFFFFFFFFF', int64), -huge(1_int64) - 1_int64, 1_int64, &
    -int(z'7FF0000000000001', int64), int(z'7FF0000000000000', int64), &
    -int(z'0010000000000000', int64), int(z'7FEFFFFFFFFFFFFF', int64), &
    int(z'3FF0000000000000', int64)]
  integer(int32), parameter :: bits32(n) = [ &
    int(z'7FC00000', int32), int(z'7FC0BEEF', int32), -int(z'007FFFFF', int32), &
    -huge(1_int32) - 1_int32, 1_int32, -int(z'7F800001', int32), int(z'7F800000', int32), &
    -int(z'00800000', int32), int(z'7F7FFFFF', int32), int(z'3F800000', int32)]
  character(len=4096), allocatable, target :: args(:)
  type(c_ptr), allocatable :: argv(:)
  type(c_ptr) :: peer
  real(c_double) :: in64(n), out64(n)
  real(c_float) :: in32(n), out32(n)
  integer :: i, argc, length
  integer(c_int) :: rc

  argc = command_argument_count()
  if (argc < 1) then
    write (error_unit, '(a)') 'usage: client_f90 PROGRAM [ARGS...]'
    stop 2
  end if
  allocate(args(argc), argv(argc))
  do i = 1, argc
    call get_command_argument(i, args(i), length)
    if (length >= len(args(i))) then
      write (error_unit, '(a, i0, a)') 'client_f90: argument ', i, ' is too long'
      stop 2
    end if
    args(i)(length + 1:length + 1) = c_null_char
    argv(i) = c_loc(args(i))
  end do

  rc = pp_spawn(argv, int(argc, c_size_t), peer)
  if (rc /= PP_OK) then
    write (error_unit, '(a, i0, 2a)') 'client_f90: pp_spawn: ', rc, ': ', last_error()
    stop 2
  end if

  in64 = transfer(bits64, in64)
  rc = pp_call_f64(peer, in64, int(n, c_size_t), out64, int(n, c_size_t), c_null_ptr)
  if (rc /= PP_OK) then
    write (error_unit, '(a, i0, 2a)') 'client_f90: pp_call_f64: ', rc, ': ', last_error()
    stop 2
  end if
  if (any(transfer(out64, bits64) /= bits64)) then
    write (error_unit, '(a)') 'client_f90: an f64 value came back changed'
    stop 1
  end if
  print '(a, i0, a)', 'f64 edge values: ', n, ' bit-exact'

  in32 = transfer(bits32, in32)
  rc = pp_call_f32(peer, in32, int(n, c_size_t), out32, int(n, c_size_t), c_null_ptr)
  if (rc /= PP_OK) then
    write (error_unit, '(a, i0, 2a)') 'client_f90: pp_call_f32: ', rc, ': ', last_error()
    stop 2
  end if
  if (any(transfer(out32, bits32) /= bits32)) then
    write (error_unit, '(a)') 'client_f90: an f32 value came back changed'
    stop 1
  end if
  print '(a, i0, a)', 'f32 edge values: ', n, ' bit-exact'

  rc = pp_close(peer)
  if (rc /= PP_OK) then
    write (error_unit, '(a, i0, 2a)') 'client_f90: pp_close: ', rc, ': ', last_error()
    stop 2
  end if
  print '(a)', 'ok'
end program client_f90
